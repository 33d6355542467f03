"""Scanned pages for OCR tests: text set with fpdf2 (the bundled CJK font for Chinese),
rendered to pixels with PDFium, then saved as the images and image-only PDFs scanners write."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from functools import cache

from PIL import Image

EN_TITLE = "Quarterly Safety Report"
EN_BODY = (
    "The plant recorded no lost time injuries this quarter. "
    "Forklift inspections were completed on schedule."
)
ZH_TITLE = "安全生产报告"
ZH_BODY = "本季度工厂没有发生工伤事故。叉车检查按计划完成。"
PAGE_MM = (148.0, 105.0)  # A6 landscape: small pages keep OCR fast


def squash(text: str) -> str:
    """Text without whitespace, case-folded: OCR output compared with what was printed."""
    return re.sub(r"\s+", "", text).casefold()


def text_pdf(
    pages: Sequence[tuple[str, str]], *, chinese: bool = False, outline: bool = False
) -> bytes:
    """Each page: a bold 20 pt title, then a 12 pt paragraph."""
    from fpdf import FPDF

    pdf = FPDF(orientation="L", format=(105, 148))
    pdf.set_auto_page_break(True, margin=8)
    regular, bold = _fonts(pdf, chinese)
    for title, body in pages:
        pdf.add_page()
        if outline:
            pdf.start_section(title)
        pdf.set_font(*bold, size=20)
        pdf.multi_cell(0, 11, title, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
        pdf.set_font(*regular, size=12)
        pdf.multi_cell(0, 7, body, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


SPARSE_LINES = ("Approved", "Signed by the plant manager")


@cache
def sparse_page() -> Image.Image:
    """An A5 page with two short lines at the top and white below (a sign-off sheet): too
    little texture for the orientation model to tell which way up it is."""
    from fpdf import FPDF

    pdf = FPDF(format="A5")
    pdf.add_page()
    pdf.set_font("helvetica", "B", size=16)
    pdf.cell(0, 10, SPARSE_LINES[0], new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=12)
    pdf.cell(0, 8, SPARSE_LINES[1], new_x="LMARGIN", new_y="NEXT")
    return render(bytes(pdf.output()))[0]


LETTER_TITLE = "Vendor Complaint Letter"
LETTER_BODY = (
    "We received 14 damaged crates of ceramic insulators from Pellworth Logistics on "
    "2 February. The crates had been stacked five high despite the marking on the lids. "
    "We request a credit of 6,200 euros."
)


@cache
def speckled_letter() -> Image.Image:
    """A short letter (a title and three lines) scanned with noise and speckles: fed upside
    down, the orientation model calls it turned 270 degrees, not 180."""
    import numpy as np
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("times", "B", size=22)
    pdf.cell(0, 12, LETTER_TITLE, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("times", size=15)
    pdf.multi_cell(0, 7, LETTER_BODY)
    page = render(bytes(pdf.output()))[0].convert("L").rotate(0.3, fillcolor=255)
    rng = np.random.default_rng(0)
    pixels = np.asarray(page).astype(np.float32) + rng.normal(0, 18, (page.height, page.width))
    pixels[rng.random(pixels.shape) < 0.0015] = 40
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).convert("RGB")


def _fonts(pdf: object, chinese: bool) -> tuple[tuple[str, str], tuple[str, str]]:
    if not chinese:
        return ("helvetica", ""), ("helvetica", "B")
    import noto_cjk_sans_jp_regular as font

    pdf.add_font("cjk", fname=str(font.FONT_PATH))  # type: ignore[attr-defined]
    return ("cjk", ""), ("cjk", "")


def render(pdf: bytes, *, dpi: int = 150) -> list[Image.Image]:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    try:
        return [
            document[i].render(scale=dpi / 72).to_pil().convert("RGB") for i in range(len(document))
        ]
    finally:
        document.close()


@cache
def en_page() -> Image.Image:
    return render(text_pdf([(EN_TITLE, EN_BODY)]))[0]


@cache
def zh_page() -> Image.Image:
    return render(text_pdf([(ZH_TITLE, ZH_BODY)], chinese=True))[0]


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    # Copies: Pillow leaves a save's encoder options on the image (the pages are cached).
    if "append_images" in options:
        options["append_images"] = [i.copy() for i in options["append_images"]]  # type: ignore[attr-defined]
    out = io.BytesIO()
    image.copy().save(out, format=fmt, **options)
    return out.getvalue()


def scanned_pdf(images: Sequence[Image.Image], *, text_first: bytes | None = None) -> bytes:
    """An image-only PDF, one page per image (JPEG inside, as scanners write). With
    ``text_first``, that PDF's pages come first (a mixed PDF: text pages, then scans)."""
    from fpdf import FPDF

    pdf = FPDF(orientation="L", format=(105, 148))
    for image in images:
        pdf.add_page()
        pdf.image(
            io.BytesIO(encode(image, "JPEG", quality=90)), x=0, y=0, w=PAGE_MM[0], h=PAGE_MM[1]
        )
    scans = bytes(pdf.output())
    if text_first is None:
        return scans
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for source in (text_first, scans):
        for page in PdfReader(io.BytesIO(source)).pages:
            writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


ECF_STAMP = "Case 1:20-cv-01234-ABC Document 45 Filed 03/12/21 Page 3 of 17"
BATES = "ACME-0004512"


def stamped_scan(image: Image.Image) -> bytes:
    """A one-page scan (the image over the whole page) with a text-layer stamp over it: an ECF
    header at the top and a Bates number at the bottom right, as a court's e-filing system and
    a document production print them."""
    from fpdf import FPDF

    pdf = FPDF(orientation="L", format=(105, 148))
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.image(io.BytesIO(encode(image, "JPEG", quality=90)), x=0, y=0, w=PAGE_MM[0], h=PAGE_MM[1])
    pdf.set_font("helvetica", size=7)
    pdf.text(6, 4, ECF_STAMP)
    pdf.text(PAGE_MM[0] - 26, PAGE_MM[1] - 3, BATES)
    return bytes(pdf.output())
