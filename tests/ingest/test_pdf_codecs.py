"""Image-only PDFs in the encodings that used to fail "no text layer" (ASCII85, CCITT G4 fax,
LZW, 8-bit grey, CMYK) ingest through OCR: real rapidocr on pages these tests write."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from PIL import Image
from pypdf import PdfReader

from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from tests.ingest import pdf_codecs, scans


@pytest.fixture(scope="module")
def parser() -> PdfParser:
    engine = OcrEngine()
    engine.warm()
    return PdfParser(engine)


def _filters(data: bytes) -> tuple[str, ...]:
    """The page image's /Filter as the file declares it (read by a second, independent reader)."""
    page = PdfReader(io.BytesIO(data)).pages[0]
    image = page["/Resources"]["/XObject"]["/Im0"].get_object()
    found = image["/Filter"]
    return tuple(str(f) for f in found) if isinstance(found, list) else (str(found),)


@pytest.mark.parametrize(
    ("encode", "filters", "colour"),
    [
        (pdf_codecs.ascii85_jpeg, ("/ASCII85Decode", "/DCTDecode"), "/DeviceRGB"),
        (pdf_codecs.ccitt_g4, ("/CCITTFaxDecode",), "/DeviceGray"),
        (pdf_codecs.lzw, ("/LZWDecode",), "/DeviceRGB"),
        (pdf_codecs.grayscale, ("/FlateDecode",), "/DeviceGray"),
        (pdf_codecs.cmyk_jpeg, ("/DCTDecode",), "/DeviceCMYK"),
    ],
    ids=["ascii85", "ccitt-g4", "lzw", "grayscale", "cmyk"],
)
def test_an_image_only_pdf_in_each_encoding_is_read_by_ocr(
    parser: PdfParser,
    encode: Callable[[Image.Image], pdf_codecs.ImageStream],
    filters: tuple[str, ...],
    colour: str,
) -> None:
    page = scans.en_page()
    data = pdf_codecs.image_pdf(page, encode(page))
    assert _filters(data) == filters
    assert colour in encode(page).entries
    parsed = parser.parse(ParseContext(data, "scan.pdf", d.PDF))
    assert parsed.metadata["ocr_pages"] == [1] and parsed.metadata["pages"] == 1
    assert [s.heading for s in parsed.sections if s.heading] == [scans.EN_TITLE]
    assert scans.squash("Forklift inspections were completed") in scans.squash(parsed.text)
    boxed = [s for s in parsed.sections if s.content.strip()]
    assert boxed and all(b.page == 1 for s in boxed for b in s.boxes)
