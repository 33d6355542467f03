"""Word and PowerPoint files that are only pictures (a scan pasted into Word, a deck of
screenshots): where the file has no text of its own, its pictures are OCR'd and their lines
become its text sections, so the document is searchable like a scanned PDF.

The pictures are read like scanned pages (orientation, layout, lines: titles become headings,
running heads across the pictures are dropped), each reported as a page done (progress, and a
cancel stops between pictures), at most ``max_pages`` of them. A picture's boxes are on the
picture, not on a page, so the sections keep none. What each picture says is recorded under
``PICTURE_TEXT_KEY`` for visual extraction, which would otherwise read it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.pixelrag.office_pictures import OfficePicture, open_picture
from eagle_rag.ingest.pixelrag.picture_ocr import blocks_text
from eagle_rag.ingest.pixelrag.reading import PageBlock, page_blocks, to_sections, with_content
from eagle_rag.plugins.payloads import TextSection

logger = logging.getLogger(__name__)


def has_text(sections: Sequence[TextSection]) -> bool:
    return any(s.content.strip() for s in sections)


def picture_sections(
    ocr: OcrEngine, pictures: Sequence[OfficePicture], context: ParseContext
) -> tuple[list[TextSection], dict[str, str]]:
    """The pictures' OCR'd sections in document order (``page``: the slide, None in a Word
    file), and each picture's text by its key."""
    if len(pictures) > context.max_pages:
        logger.warning(
            "%s: only the first %d of its %d pictures are read",
            context.filename,
            context.max_pages,
            len(pictures),
        )
        pictures = pictures[: context.max_pages]
    read: list[tuple[int, list[PageBlock]]] = []
    texts: dict[str, str] = {}
    for index, picture in enumerate(pictures, start=1):
        opened = open_picture(picture.blob) if picture.key not in texts else None
        if opened is not None:  # a picture used twice (a logo) is read once
            blocks = page_blocks(ocr.read(opened), index)
            read.append((index, blocks))
            texts[picture.key] = blocks_text(blocks)
        context.page_done(index, len(pictures))
    sections = [
        replace(s, page=pictures[(s.page or 1) - 1].page or None, boxes=())
        for s in to_sections(read)
    ]
    return with_content(sections), texts
