"""Office Open XML: DOCX (heading styles, lists, tables) and PPTX (slide titles, bodies, notes).

A Word body is read from its XML (``docx_body``: content controls, tracked insertions, text
boxes and nested tables, which python-docx's text skips), its headings by ``docx_styles``, its
list marks by ``docx_lists``, its notes by ``docx_notes``; a slide's shapes by ``pptx_shapes``.

A file with no text of its own (a scan pasted into Word, a deck of screenshots) is read from its
pictures by OCR where the pipeline OCRs (``office_ocr``). The archive guard (ingest/safety.py)
has already refused zip bombs when these run.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import DOCX, PPTX
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table, result
from eagle_rag.ingest.parsers.docx_body import (
    PARAGRAPH,
    TABLE,
    blocks,
    container_text,
    paragraph_text,
    text_boxes,
)
from eagle_rag.ingest.parsers.docx_lists import DocxLists
from eagle_rag.ingest.parsers.docx_notes import DocxNotes
from eagle_rag.ingest.parsers.docx_styles import heading_level
from eagle_rag.ingest.parsers.ocr_reader import OcrReader
from eagle_rag.ingest.parsers.office_ocr import has_text, picture_sections
from eagle_rag.ingest.parsers.pptx_shapes import reading_order, shape_sections
from eagle_rag.ingest.pixelrag.office_pictures import docx_pictures, slide_pictures
from eagle_rag.ingest.pixelrag.picture_ocr import PICTURE_TEXT_KEY
from eagle_rag.plugins.payloads import ParseResult, TextSection


class DocxParser(OcrReader):
    name = "docx"
    supported_mime_types: tuple[str, ...] = (DOCX,)

    def parse(self, context: ParseContext) -> ParseResult:
        import docx

        try:
            document = docx.Document(io.BytesIO(context.data))
        except Exception as exc:  # python-docx raises many types for broken packages
            raise InvalidInputError(
                f"the DOCX file is corrupt: {exc}", filename=context.filename
            ) from exc
        sections: list[TextSection] = []
        story = _Story(document._body, DocxNotes(document.part), DocxLists(document.part))
        shown_title = ""  # the first Title-style paragraph: the document's name, not a section
        for block in blocks(document.element.body):
            paragraph = _wrapped(block, story)
            if paragraph is not None and not shown_title and _is_title(paragraph):
                shown_title = paragraph_text(block).strip()
            else:
                sections.extend(_block_sections(block, story))
        # The title readers see first; the core property is often a template's or stale.
        title = shown_title or (document.core_properties.title or "").strip()
        metadata: dict[str, object] = {"title": title} if title else {}
        if context.ocr and not has_text(sections):
            pictures = list(docx_pictures(document))
            found, texts = picture_sections(self.ocr, pictures, context)
            sections.extend(found)
            metadata[PICTURE_TEXT_KEY] = texts
        return result(sections, **metadata)


@dataclass(frozen=True, slots=True)
class _Story:
    """What reading a document's blocks needs: its body (python-docx's parent of paragraphs
    and tables), its notes and its list numbering, counted as the blocks are read."""

    body: Any
    notes: DocxNotes
    lists: DocxLists


def _wrapped(block: Any, story: _Story) -> Any:
    """A ``w:p`` as a python-docx Paragraph (for its style), None for a table."""
    from docx.text.paragraph import Paragraph

    return Paragraph(block, story.body) if block.tag == PARAGRAPH else None


# Word lays out at most 63 columns; other editors a few more. Beyond this a span is no layout.
MAX_TABLE_COLUMNS = 256


def _block_sections(block: Any, story: _Story) -> Iterator[TextSection]:
    """A paragraph's or table's section, then the notes it refers to; a paragraph's text
    boxes follow it."""
    from docx.table import Table

    if block.tag == TABLE:
        rows = [_row_texts(row) for row in Table(block, story.body).rows]
        if rows:
            yield TextSection(markdown_table(rows), kind="table")
        yield from story.notes.after(block)
        return
    section = _paragraph(_wrapped(block, story), story.lists)
    if section is not None:
        yield section
    yield from story.notes.after(block)
    for box in text_boxes(block):
        for inner in blocks(box):
            yield from _block_sections(inner, story)


def _row_texts(row: Any) -> list[str]:
    """A table row's cell texts (nested tables and text boxes included); a cell merged across
    columns is listed once per column it spans (python-docx), so its text is kept in the first
    and the rest are left empty. A row spanning more columns than any table lays out is read
    cell by cell: an 875-byte file whose one cell spans 1,000,000 columns made 490,000 chunks."""
    cells = row._tr.tc_lst
    if sum(tc.grid_span for tc in cells) > MAX_TABLE_COLUMNS:
        return [container_text(tc) for tc in cells]
    texts: list[str] = []
    seen: set[int] = set()
    for cell in row.cells:
        texts.append("" if id(cell._tc) in seen else container_text(cell._tc))
        seen.add(id(cell._tc))
    return texts


def _is_title(paragraph: Any) -> bool:
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    return style.lower() == "title" and bool(paragraph_text(paragraph._p).strip())


def _paragraph(paragraph: Any, lists: DocxLists) -> TextSection | None:
    text = paragraph_text(paragraph._p).strip()
    if not text:
        return None
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style.lower() == "title":
        return TextSection("", heading=text, level=1)
    level = heading_level(paragraph)
    if level is not None:  # "2.1 Scope", as Word shows it: a reader cites the section by it
        number = lists.number(paragraph)
        return TextSection("", heading=f"{number} {text}" if number else text, level=level)
    mark = lists.mark(paragraph)
    return TextSection(text) if mark is None else TextSection(mark + text, kind="list")


class PptxParser(OcrReader):
    """One section per slide: its title is the heading, the page is the slide number, its
    shapes' text follows in reading order (``pptx_shapes``)."""

    name = "pptx"
    supported_mime_types: tuple[str, ...] = (PPTX,)

    def parse(self, context: ParseContext) -> ParseResult:
        from pptx import Presentation

        try:
            presentation = Presentation(io.BytesIO(context.data))
        except Exception as exc:
            raise InvalidInputError(
                f"the PPTX file is corrupt: {exc}", filename=context.filename
            ) from exc
        slides = list(presentation.slides)
        if len(slides) > context.max_pages:
            raise InvalidInputError(
                f"the presentation has {len(slides)} slides (limit {context.max_pages})",
                filename=context.filename,
            )
        sections: list[TextSection] = []
        notes: list[TextSection] = []
        for number, slide in enumerate(slides, start=1):
            title_shape = slide.shapes.title
            title = title_shape.text_frame.text.strip() if title_shape is not None else ""
            heading = title or f"Slide {number}"
            sections.append(TextSection("", heading=heading, level=1, page=number))
            for shape in reading_order(slide.shapes):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                sections.extend(shape_sections(shape, number))
            notes.extend(_speaker_notes(slide, number))
        metadata: dict[str, object] = {"pages": len(slides)}
        if context.ocr and not has_text(sections):
            width = float(presentation.slide_width or 1)
            height = float(presentation.slide_height or 1)
            pictures = [
                picture
                for number, slide in enumerate(slides, start=1)
                for picture in slide_pictures(slide, number, width, height)
            ]
            found, texts = picture_sections(self.ocr, pictures, context)
            # Under its slide's title; the sort is stable, so each title stays first.
            below = [replace(s, level=s.level + 1) if s.heading else s for s in found]
            sections = sorted([*sections, *below], key=lambda s: s.page or 0)
            metadata[PICTURE_TEXT_KEY] = texts
        # Each slide's notes close its section (a stable sort keeps them after its content).
        return result(sorted([*sections, *notes], key=lambda s: s.page or 0), **metadata)


def _speaker_notes(slide: Any, page: int) -> Iterator[TextSection]:
    """What the presenter says about the slide: often the facts behind its bullet points (the
    budget, the date, the figure), so they are evidence of the slide's section."""
    if not slide.has_notes_slide:
        return
    frame = slide.notes_slide.notes_text_frame
    lines = [p.text.strip() for p in frame.paragraphs if p.text.strip()] if frame else []
    if lines:
        yield TextSection("Speaker notes: " + "\n".join(lines), page=page)
