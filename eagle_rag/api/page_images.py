"""A document's page as a PNG for previews: a PDF page rendered, or a frame of an image document.

Hits cite pages of both (a multi-page TIFF's second frame is page 2), so both render the same
way: ``width`` pixels wide, the height following the page's shape but never over MAX_HEIGHT (a
receipt-like strip is scaled down to fit, not rendered tens of thousands of pixels tall). Image
documents become PNG whatever they were stored as: browsers show no TIFF. A PDF that PDFium
refuses is opened through the same second reader ingest used (``pdf_repair.readable``), so a
repaired document's pages preview too.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pypdfium2 as pdfium
from PIL import Image

from eagle_rag.errors import InvalidInputError, NotFoundError
from eagle_rag.ingest.parsers.pdf_repair import readable
from eagle_rag.ingest.parsers.pdfium_lock import PDFIUM
from eagle_rag.ingest.pixelrag.images import page as image_page

PDF = "application/pdf"
MIN_WIDTH, MAX_WIDTH = 200, 2400
MAX_HEIGHT = 2 * MAX_WIDTH  # A4 at the widest is 3,394 px tall; taller pages shrink to fit


@dataclass(frozen=True, slots=True)
class PageImage:
    """Image bytes, their media type, and the page count of the source."""

    content: bytes
    media_type: str
    pages: int


def is_paged(mime_type: str) -> bool:
    return mime_type == PDF or mime_type.startswith("image/")


def page_image(
    data: bytes, mime_type: str, page: int, width: int, *, filename: str = ""
) -> PageImage:
    """Page ``page`` (1-based) of the document as PNG; NotFoundError for a page it lacks."""
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        raise InvalidInputError(f"width must be {MIN_WIDTH}..{MAX_WIDTH}", field="width")
    if mime_type.startswith("image/"):
        return _image_page(data, filename, page, width)
    if mime_type != PDF:
        raise NotFoundError(f"a {mime_type} document has no page images", page=page)
    data, _ = readable(data, filename)  # PDFium refused it: the rewrite ingest read too
    with PDFIUM:  # PDFium is not thread-safe; requests render on threads
        return _render_page(data, page, width)


def fitted(size: tuple[float, float], width: int) -> float:
    """The scale that makes a page ``width`` wide, or MAX_HEIGHT tall when that is less."""
    page_width, page_height = size
    return min(width / page_width, MAX_HEIGHT / page_height)


def _image_page(data: bytes, filename: str, page: int, width: int) -> PageImage:
    frame, count = image_page(data, filename, page)
    if frame is None:
        raise NotFoundError(f"page {page} is out of range (1..{count})", page=page)
    scale = fitted(frame.size, width)
    size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
    return PageImage(_png(frame.resize(size, Image.Resampling.LANCZOS)), "image/png", count)


def _render_page(data: bytes, page: int, width: int) -> PageImage:
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise InvalidInputError(f"the stored PDF cannot be opened: {exc}") from exc
    try:
        count = len(pdf)
        if not 1 <= page <= count:
            raise NotFoundError(f"page {page} is out of range (1..{count})", page=page)
        pdf_page = pdf[page - 1]
        try:
            bitmap = pdf_page.render(scale=fitted(pdf_page.get_size(), width))
            content = _png(bitmap.to_pil())
        finally:
            pdf_page.close()
        return PageImage(content, "image/png", count)
    finally:
        pdf.close()


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
