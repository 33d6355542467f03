"""A document's page as an image: a PDF page rendered to PNG, or an image document as stored."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pypdfium2 as pdfium

from eagle_rag.errors import InvalidInputError, NotFoundError
from eagle_rag.ingest.parsers.pdfium_lock import PDFIUM

PDF = "application/pdf"
MIN_WIDTH, MAX_WIDTH = 200, 2400


@dataclass(frozen=True, slots=True)
class PageImage:
    """Image bytes, their media type, and the page count of the source."""

    content: bytes
    media_type: str
    pages: int


def is_paged(mime_type: str) -> bool:
    return mime_type == PDF or mime_type.startswith("image/")


def page_image(data: bytes, mime_type: str, page: int, width: int) -> PageImage:
    """Page ``page`` (1-based) of the document; NotFoundError for a page it does not have."""
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        raise InvalidInputError(f"width must be {MIN_WIDTH}..{MAX_WIDTH}", field="width")
    if mime_type.startswith("image/"):
        if page != 1:
            raise NotFoundError(f"an image has one page, not page {page}", page=page)
        return PageImage(data, mime_type, 1)
    if mime_type != PDF:
        raise NotFoundError(f"a {mime_type} document has no page images", page=page)
    return _pdf_page(data, page, width)


def _pdf_page(data: bytes, page: int, width: int) -> PageImage:
    with PDFIUM:  # PDFium is not thread-safe; requests render on threads
        return _render_page(data, page, width)


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
            scale = width / pdf_page.get_width()
            bitmap = pdf_page.render(scale=scale)
            buffer = io.BytesIO()
            bitmap.to_pil().save(buffer, format="PNG", optimize=False)
        finally:
            pdf_page.close()
        return PageImage(buffer.getvalue(), "image/png", count)
    finally:
        pdf.close()
