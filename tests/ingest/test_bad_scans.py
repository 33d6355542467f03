"""Scans as they arrive from real scanners and phones: pages fed sideways, pages a viewer turns
(/Rotate), photos turned by EXIF, PDFs cut short. Each reads, or fails with a clear reason."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageChops, ImageStat
from pypdf import PdfReader, PdfWriter

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.pixelrag.visuals import extract_visuals
from eagle_rag.ingest.pixelrag.visuals_pdf import PdfVisualOptions
from eagle_rag.plugins.payloads import DocumentSource
from tests.ingest import scans


def _turned(pdf: bytes, degrees: int) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    for page in writer.pages:
        page.rotate(degrees)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    "make",
    [
        lambda: scans.scanned_pdf([scans.en_page().rotate(90, expand=True)]),  # fed sideways
        lambda: _turned(scans.scanned_pdf([scans.en_page()]), 270),  # /Rotate on the page
        lambda: _turned(scans.scanned_pdf([scans.en_page()]), 180),  # upside down
    ],
    ids=["sideways-scan", "rotate-270", "rotate-180"],
)
def test_a_turned_scanned_page_is_read_upright(ocr: OcrEngine, make: object) -> None:
    data = make()  # type: ignore[operator]
    parsed = PdfParser(ocr).parse(ParseContext(data, "turned.pdf", d.PDF))
    assert parsed.metadata["ocr_pages"] == [1]
    assert scans.squash(scans.EN_BODY) in scans.squash(parsed.text)
    boxes = [b.bbox for s in parsed.sections for b in s.boxes]
    assert boxes and all(0 <= v <= 1 for box in boxes for v in box)


def _stored_tile(ocr: OcrEngine, data: bytes, mime: str, filename: str) -> Image.Image:
    parser = PdfParser(ocr) if mime == d.PDF else ImageParser(ocr)
    parsed = parser.parse(ParseContext(data, filename, mime))
    source = DocumentSource("doc", "kb", filename, mime, len(data), "0" * 64, "key", {})
    found = extract_visuals(source, data, parsed, PdfVisualOptions())
    return Image.open(io.BytesIO(next(v.image for v in found if v.kind == "tile")))


def _difference(a: Image.Image, b: Image.Image) -> float:
    """Mean grey-level difference of two pictures brought to one size (0 = the same page)."""
    size = (120, 160)
    grey_a, grey_b = a.convert("L").resize(size), b.convert("L").resize(size)
    return float(ImageStat.Stat(ImageChops.difference(grey_a, grey_b)).mean[0])


@pytest.mark.parametrize(
    ("make", "mime"),
    [
        (lambda: scans.scanned_pdf([scans.en_page().rotate(90, expand=True)]), d.PDF),
        (lambda: _turned(scans.scanned_pdf([scans.en_page()]), 270), d.PDF),
        (lambda: _turned(scans.scanned_pdf([scans.en_page()]), 180), d.PDF),
        (lambda: scans.encode(scans.en_page().rotate(90, expand=True), "PNG"), d.PNG),
    ],
    ids=["sideways-scan", "rotate-270", "rotate-180", "sideways-png"],
)
def test_a_turned_pages_tile_is_stored_upright(ocr: OcrEngine, make: object, mime: str) -> None:
    """The tile of a page OCR read turned was stored as scanned: an image model (visual
    search) and a chat model (an answer's attachment) were shown the page sideways."""
    upright = _stored_tile(ocr, scans.scanned_pdf([scans.en_page()]), d.PDF, "upright.pdf")
    turned = _stored_tile(ocr, make(), mime, "turned.pdf" if mime == d.PDF else "turned.png")  # type: ignore[operator]
    assert _difference(upright, turned) < 2.0
    assert _difference(upright, turned.rotate(180)) > 5.0  # the measure tells pages apart


def test_a_phone_photo_turned_by_exif_is_read(ocr: OcrEngine) -> None:
    # Stored sideways, with EXIF orientation 6 ("turn 90° clockwise to view"), as phones do.
    stored = scans.en_page().rotate(90, expand=True)
    exif = Image.Exif()
    exif[0x0112] = 6
    data = scans.encode(stored, "JPEG", quality=90, exif=exif.tobytes())
    parsed = ImageParser(ocr).parse(ParseContext(data, "photo.jpg", d.JPEG))
    assert [s.heading for s in parsed.sections if s.heading] == [scans.EN_TITLE]
    assert scans.squash(scans.EN_BODY) in scans.squash(parsed.text)


@pytest.mark.parametrize("keep", [0.5, 0.99], ids=["half", "trailer-lost"])
def test_a_pdf_cut_short_is_refused_with_both_readers_reasons(keep: float) -> None:
    whole = scans.scanned_pdf([scans.en_page(), scans.zh_page()])
    cut = whole[: int(len(whole) * keep)]  # an interrupted download: no trailer, no catalog
    with pytest.raises(InvalidInputError, match="corrupt or unreadable") as caught:
        PdfParser(OcrEngine()).parse(ParseContext(cut, "cut.pdf", d.PDF))
    assert "a second reader also failed" in str(caught.value)


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.97])
@pytest.mark.parametrize("compression", ["tiff_lzw", "raw"])
def test_a_multi_page_tiff_cut_short_is_refused_as_truncated(keep: float, compression: str) -> None:
    # Pillow raises TypeError ("Missing dimensions") counting the pages of a TIFF whose later
    # page header was cut off; that reached the user as an internal error, not a reason.
    whole = scans.encode(
        scans.en_page(),
        "TIFF",
        save_all=True,
        append_images=[scans.zh_page()],
        compression=compression,
    )
    cut = whole[: int(len(whole) * keep)]
    with pytest.raises(InvalidInputError, match="corrupt"):
        mime = d.detect(cut, "fax.tif").mime_type  # the header may still look whole
        ImageParser(OcrEngine()).parse(ParseContext(cut, "fax.tif", mime))
