"""Scans too large or too thin to OCR as they are: a poster-sized PDF page is rendered under a
pixel cap (for OCR and for visual extraction alike), a few-KB image-only PDF hiding a
3.6-gigapixel image renders in bounded memory, and a strip too thin to hold legible text is
refused with its size (rapidocr's resize used to raise, which surfaced as a model-provider
failure instead of a reason)."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib

import pytest
from PIL import Image

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.parsers.pdf_render import MAX_RENDER_PIXELS
from eagle_rag.ingest.pixelrag.engine import OcrEngine, OcrPage, Region
from eagle_rag.ingest.pixelrag.visuals_pdf import PdfVisualOptions, pdf_visuals
from tests.ingest import pdf_codecs, scans


class SizeRecordingEngine(OcrEngine):
    """The real engine; it also notes the size of every page image it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[tuple[int, int]] = []

    def read(self, image: Image.Image) -> OcrPage:
        self.sizes.append(image.size)
        return super().read(image)


@pytest.fixture(scope="module")
def ocr() -> SizeRecordingEngine:
    engine = SizeRecordingEngine()
    engine.warm()
    return engine


def _pdf(ocr: OcrEngine, data: bytes) -> str:
    return PdfParser(ocr).parse(ParseContext(data, "scan.pdf", d.PDF)).text


@pytest.mark.slow
def test_a_poster_sized_scanned_page_is_rendered_under_the_cap_and_read(
    ocr: SizeRecordingEngine,
) -> None:
    page = scans.en_page()
    # The A6 scan stretched over a 175 × 124 inch page: 656 megapixels at the OCR resolution.
    data = pdf_codecs.image_pdf(page, pdf_codecs.grayscale(page), dpi=5)
    ocr.sizes.clear()
    text = _pdf(ocr, data)
    (width, height), *_ = ocr.sizes
    assert width * height <= MAX_RENDER_PIXELS
    assert width * height > MAX_RENDER_PIXELS * 0.9  # capped, not shrunk to nothing
    assert "Forklift inspections" in text


_RENDER_A_HIDDEN_GIANT = """
import json, sys
from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
data = sys.stdin.buffer.read()
try:
    PdfParser().parse(ParseContext(data, "giant.pdf", d.PDF))
    outcome = "read"
except InvalidInputError as exc:
    outcome = str(exc)
# VmHWM: this process's own peak (ru_maxrss would carry the parent's over the exec).
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) // 1024
print(json.dumps({"outcome": outcome, "peak_mb": peak}))
"""


def _hidden_giant(side: int) -> bytes:
    """A one-page PDF (6 by 6 inches) showing a square 1-bit white image, ``side`` pixels wide."""
    packer = zlib.compressobj(9)
    row = b"\xff" * (side // 8)
    pixels = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    stream = pdf_codecs.ImageStream(
        "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /FlateDecode", pixels
    )
    return pdf_codecs.image_pdf((side, side), stream, dpi=side // 6)


@pytest.mark.slow
def test_a_scanned_pdf_hiding_a_giant_image_renders_in_bounded_memory() -> None:
    # 60,000² pixels in 440 KB: decoded whole at 8 bits a pixel it would take 3.6 GB. The page
    # is rendered at the OCR resolution (PDFium streams the image), never decoded at full size.
    data = _hidden_giant(60_000)
    assert len(data) < 600_000
    child = subprocess.run(
        [sys.executable, "-c", _RENDER_A_HIDDEN_GIANT],
        input=data,
        capture_output=True,
        timeout=300,
        check=True,
    )
    report = json.loads(child.stdout.decode().strip().splitlines()[-1])
    assert "no text could be read" in report["outcome"]  # a blank page: a reason, no crash
    assert report["peak_mb"] < 1_000, report  # the models and a 900 × 900 page: ~400 MB


@pytest.mark.parametrize("size", [(40_000, 30), (3, 3_000)], ids=["banner", "sliver"])
def test_an_image_too_thin_to_read_is_refused_with_its_size(size: tuple[int, int]) -> None:
    data = scans.encode(Image.new("RGB", size, "white"), "PNG")
    with pytest.raises(InvalidInputError, match="too thin for its text to be read") as caught:
        ImageParser(OcrEngine()).parse(ParseContext(data, "strip.png", d.PNG))
    assert (caught.value.fields["width"], caught.value.fields["height"]) == size


def test_a_pdf_page_too_thin_to_read_gives_a_reason_not_a_model_failure(
    ocr: SizeRecordingEngine,
) -> None:
    # A 200-inch by 0.3-inch page: 30,000 × 41 pixels at the OCR resolution, which rapidocr
    # cannot fit to its input (its resize raised "ResizeImgError" before the engine's check).
    strip = Image.new("L", (30_000, 41), 255)
    data = pdf_codecs.image_pdf(strip, pdf_codecs.grayscale(strip))
    ocr.sizes.clear()
    with pytest.raises(InvalidInputError, match="no text could be read"):
        _pdf(ocr, data)
    assert ocr.sizes and max(ocr.sizes[0]) > 20 * min(ocr.sizes[0])  # it did reach the engine


def test_a_long_thin_image_within_the_limit_is_still_read(ocr: SizeRecordingEngine) -> None:
    # Three pages one under another (875 × 1,863): tall, but nowhere near too thin.
    page = scans.en_page()
    tall = Image.new("RGB", (page.width, page.height * 3), "white")
    for index in range(3):
        tall.paste(page, (0, page.height * index))
    parsed = ImageParser(ocr).parse(ParseContext(scans.encode(tall, "PNG"), "tall.png", d.PNG))
    assert parsed.text.count("Forklift inspections") == 3


def _poster_with_scattered_marks() -> bytes:
    """A text-born 60 by 44 inch poster (60 megapixels at 150 dpi): a title and 20 small marks
    drawn far apart, too scattered to group as a chart, so the layout model looks at the page."""
    from fpdf import FPDF

    pdf = FPDF(format=(1524, 1130))
    pdf.add_page()
    pdf.set_font("helvetica", "B", 60)
    pdf.text(100, 100, "Site Plan")
    for index in range(20):
        x, y = 100 + (index % 5) * 280, 250 + (index // 5) * 220
        pdf.rect(x, y, 8, 8, style="F")
    return bytes(pdf.output())


def test_visual_extraction_renders_a_poster_page_under_the_same_cap(ocr: OcrEngine) -> None:
    seen: list[tuple[int, int]] = []

    def layout(image: Image.Image) -> tuple[Region, ...]:
        seen.append(image.size)  # the rendered page the real layout model is given
        return ocr.layout(image)

    pdf_visuals(_poster_with_scattered_marks(), frozenset(), PdfVisualOptions(), layout=layout)
    [(width, height)] = seen
    assert width * height <= MAX_RENDER_PIXELS
    assert width * height > MAX_RENDER_PIXELS * 0.9  # capped, not shrunk to nothing
