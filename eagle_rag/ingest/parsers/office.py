"""Office Open XML: DOCX (heading styles, lists, tables) and PPTX (slide titles and bodies).

The archive guard (ingest/safety.py) has already refused zip bombs when these run.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import DOCX, PPTX
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table, result
from eagle_rag.plugins.payloads import ParseResult, TextSection

_HEADING = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)


class DocxParser:
    name = "docx"
    supported_mime_types: tuple[str, ...] = (DOCX,)

    def parse(self, context: ParseContext) -> ParseResult:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        try:
            document = docx.Document(io.BytesIO(context.data))
        except Exception as exc:  # python-docx raises many types for broken packages
            raise InvalidInputError(
                f"the DOCX file is corrupt: {exc}", filename=context.filename
            ) from exc
        sections: list[TextSection] = []
        for block in document.iter_inner_content():
            section: TextSection | None = None
            if isinstance(block, Paragraph):
                section = _paragraph(block)
            elif isinstance(block, Table):
                rows = [[cell.text for cell in row.cells] for row in block.rows]
                section = TextSection(markdown_table(rows), kind="table") if rows else None
            if section is not None:
                sections.append(section)
        title = (document.core_properties.title or "").strip()
        return result(sections, title=title) if title else result(sections)


def _paragraph(paragraph: Any) -> TextSection | None:
    text = paragraph.text.strip()
    if not text:
        return None
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style.lower() == "title":
        return TextSection("", heading=text, level=1)
    match = _HEADING.match(style.strip())
    if match:
        return TextSection("", heading=text, level=int(match.group(1)))
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    if numbered or style.lower().startswith("list"):
        return TextSection(f"- {text}", kind="list")
    return TextSection(text)


class PptxParser:
    """One section per slide: its title is the heading, the page is the slide number."""

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
        for number, slide in enumerate(slides, start=1):
            title_shape = slide.shapes.title
            title = title_shape.text_frame.text.strip() if title_shape is not None else ""
            heading = title or f"Slide {number}"
            sections.append(TextSection("", heading=heading, level=1, page=number))
            for shape in slide.shapes:
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                sections.extend(_shape_sections(shape, number))
        return result(sections, pages=len(slides))


def _shape_sections(shape: Any, page: int) -> Iterator[TextSection]:
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        if rows:
            yield TextSection(markdown_table(rows), page=page, kind="table")
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        lines = [p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip()]
        if lines:
            yield TextSection("\n".join(lines), page=page)
    elif shape.shape_type is not None and hasattr(shape, "shapes"):  # a group
        for inner in shape.shapes:
            yield from _shape_sections(inner, page)
