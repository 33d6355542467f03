"""PDF: the text layer page by page (pypdfium2); the outline, when present, gives the headings."""

from __future__ import annotations

from dataclasses import dataclass

import pypdfium2 as pdfium

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import PDF
from eagle_rag.ingest.parsers.base import ParseContext, result
from eagle_rag.plugins.payloads import ParseResult, TextSection


@dataclass(frozen=True, slots=True)
class _Bookmark:
    title: str
    level: int
    page: int  # 1-based


class PdfParser:
    name = "pdf"
    supported_mime_types: tuple[str, ...] = (PDF,)

    def parse(self, context: ParseContext) -> ParseResult:
        document = _open(context)
        try:
            if len(document) > context.max_pages:
                raise InvalidInputError(
                    f"the PDF has {len(document)} pages (limit {context.max_pages})",
                    filename=context.filename,
                )
            pages = [_page_text(document, i) for i in range(len(document))]
            bookmarks = _outline(document)
            title = (document.get_metadata_dict().get("Title") or "").strip()
        finally:
            document.close()
        if not any(p.strip() for p in pages):
            raise InvalidInputError(
                "the PDF has no text layer (scanned pages need OCR, which is not enabled)",
                filename=context.filename,
            )
        sections: list[TextSection] = []
        for number, text in enumerate(pages, start=1):
            for mark in (b for b in bookmarks if b.page == number):
                sections.append(TextSection("", heading=mark.title, level=mark.level, page=number))
            for paragraph in _paragraphs(text):
                sections.append(TextSection(paragraph, page=number))
        metadata: dict[str, object] = {"pages": len(pages)}
        if title:
            metadata["title"] = title
        return result(sections, **metadata)


def _open(context: ParseContext) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(context.data)
    except pdfium.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise InvalidInputError(
                "the PDF is encrypted; upload it without a password", filename=context.filename
            ) from exc
        raise InvalidInputError(
            f"the PDF is corrupt or unreadable: {exc}", filename=context.filename
        ) from exc


def _page_text(document: pdfium.PdfDocument, index: int) -> str:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            return str(textpage.get_text_range()).replace("\r\n", "\n").replace("\r", "\n")
        finally:
            textpage.close()
    finally:
        page.close()


def _outline(document: pdfium.PdfDocument) -> list[_Bookmark]:
    marks = []
    try:
        for item in document.get_toc(max_depth=6):
            title = (item.get_title() or "").strip()
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            if title and index is not None:
                marks.append(_Bookmark(title, item.level + 1, index + 1))
    except pdfium.PdfiumError:
        return []  # a broken outline costs headings, not the document
    return marks


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; single line breaks inside a paragraph become spaces."""
    blocks = [b.strip() for b in text.split("\n\n")]
    out = []
    for block in blocks:
        if not block:
            continue
        out.append(" ".join(line.strip() for line in block.split("\n") if line.strip()))
    return out
