"""PDF: each page from its text layer (pypdfium2), or from its pixels when it has none.

Pages are probed one by one (characters per page area, share of unreadable glyphs, images
covering the page, text only in the margins: ``probe``); a page without a usable text layer
that shows an image, a scan under a stamped header, and a page whose glyphs are unreadable are
rendered and OCR'd, so a scanned PDF, or the scanned pages of a mixed one, read like the rest.
The outline, when present, gives the headings; without one they come from the text layer's
typography (and OCR'd title regions).
Every block keeps its boxes on its page. A file PDFium cannot open is re-read and rewritten by
a second reader (pypdf) before it is given up; an encrypted one is refused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import PDF
from eagle_rag.ingest.parsers.base import ParseContext, result
from eagle_rag.ingest.parsers.ocr_reader import OcrReader
from eagle_rag.ingest.parsers.pdf_outline import Bookmark, interleave, read_outline
from eagle_rag.ingest.parsers.pdf_render import render
from eagle_rag.ingest.parsers.pdf_repair import open_pdf, read_title, readable
from eagle_rag.ingest.parsers.pdf_structure import PageLines, sections
from eagle_rag.ingest.parsers.pdf_text import TextLine, read_text_layer
from eagle_rag.ingest.parsers.pdfium_lock import PDFIUM
from eagle_rag.ingest.pixelrag.geometry import area
from eagle_rag.ingest.pixelrag.pdf_objects import page_objects
from eagle_rag.ingest.pixelrag.probe import chars_outside_margins, probe
from eagle_rag.ingest.pixelrag.reading import PageBlock, to_sections, with_content
from eagle_rag.ingest.pixelrag.visuals_regions import METADATA_KEY, TURNS_KEY, RegionVisual
from eagle_rag.plugins.payloads import ParseResult, TextSection

logger = logging.getLogger(__name__)

OCR_DPI = 150


@dataclass(frozen=True, slots=True)
class _Read:
    """What was read from the document before it was closed."""

    text_pages: list[PageLines]
    ocr_pages: list[tuple[int, list[PageBlock]]]
    bookmarks: list[Bookmark]
    title: str
    pages: int
    regions: list[RegionVisual]
    turns: list[list[int]]  # [page, degrees] of OCR'd pages read turned upright


class PdfParser(OcrReader):
    name = "pdf"
    supported_mime_types: tuple[str, ...] = (PDF,)

    def parse(self, context: ParseContext) -> ParseResult:
        data, repaired = readable(context.data, context.filename)
        read = self._read(data, context)
        ordered = with_content(_merge(read))
        if not any(s.content.strip() for s in ordered):
            raise InvalidInputError(
                "the PDF has no text: its pages are blank, and no text could be read from "
                "their images"
                if context.ocr
                else "the PDF has no text layer, and its ingest pipeline does not OCR pages "
                "(the pixelrag pipeline does)",
                filename=context.filename,
            )
        metadata: dict[str, object] = {
            "pages": read.pages,
            "ocr_pages": [number for number, _ in read.ocr_pages],
            METADATA_KEY: [region.to_dict() for region in read.regions],
            TURNS_KEY: read.turns,
        }
        if read.title:
            metadata["title"] = read.title
        if repaired:
            metadata["repaired"] = True
        return result(ordered, **metadata)

    def _read(self, data: bytes, context: ParseContext) -> _Read:
        """Each page's text layer, or its OCR'd blocks. PDFium is held one page at a time
        (it is not thread-safe: pdfium_lock.py), not while a rendered page is OCR'd."""
        with PDFIUM:
            document = open_pdf(data, context.filename)
        try:
            with PDFIUM:
                count = len(document)
                if count > context.max_pages:
                    raise InvalidInputError(
                        f"the PDF has {count} pages (limit {context.max_pages})",
                        filename=context.filename,
                    )
                bookmarks = read_outline(document)
            text_pages: list[PageLines] = []
            ocr_pages: list[tuple[int, list[PageBlock]]] = []
            regions: list[RegionVisual] = []
            turns: list[list[int]] = []
            for number in range(1, count + 1):
                with PDFIUM:
                    lines, scan = _read_page(document, number, ocr=context.ocr)
                if scan is not None:
                    reading = self.read_page(scan, number)
                    ocr_pages.append((number, reading.blocks))
                    regions.extend(reading.regions)
                    if reading.turn:
                        turns.append([number, reading.turn])
                else:  # a sparse text layer with nothing to OCR is still the page's text
                    text_pages.append(PageLines(number, lines))
                context.page_done(number, count)
            with PDFIUM:
                title = read_title(document, data)
        finally:
            with PDFIUM:
                document.close()
        return _Read(text_pages, ocr_pages, bookmarks, title, count, regions, turns)


def _read_page(
    document: pdfium.PdfDocument, number: int, *, ocr: bool
) -> tuple[tuple[TextLine, ...], Image.Image | None]:
    """Page ``number``'s text-layer lines, or (when it has no usable text layer and the
    pipeline OCRs) its rendering, to be OCR'd once PDFium is free."""
    try:
        page = document[number - 1]
    except pdfium.PdfiumError as exc:  # a page tree that loops, a page object that is gone
        raise InvalidInputError(
            f"the PDF is corrupt: page {number} cannot be read ({exc})", page=number
        ) from exc
    try:
        layer = read_text_layer(page)
        width, height = page.get_size()
        images, cover = _images(page)
        found = probe(
            layer.text + "\ufffd" * layer.unmapped,
            width,
            height,
            images,
            image_cover=cover,
            body_chars=chars_outside_margins((line.text, line.bbox) for line in layer.lines),
        )
        if found.needs_ocr and ocr:
            return (), _render_for_ocr(page)
        if found.garbled:  # unreadable glyphs are noise in the index, not the page's text
            logger.info("page %d: its text layer is unreadable and the page is not OCR'd", number)
            return (), None
        return layer.lines, None
    finally:
        page.close()


def _render_for_ocr(page: pdfium.PdfPage) -> Image.Image:
    return render(page, OCR_DPI).convert("RGB")


def _merge(read: _Read) -> list[TextSection]:
    """All pages in order; outline titles open their sections where they point (and replace
    OCR'd titles)."""
    outline = bool(read.bookmarks)
    by_page: dict[int, list[TextSection]] = {}
    for section in sections(read.text_pages, detect_headings=not outline):
        by_page.setdefault(section.page or 0, []).append(section)
    # All OCR'd pages at once: heading levels and running heads are found across the document.
    for section in to_sections(read.ocr_pages):
        if outline and section.heading:  # the outline is the author's structure
            section = replace(section, content=section.heading, heading=None, level=0)
        by_page.setdefault(section.page or 0, []).append(section)
    ordered: list[TextSection] = []
    for number in sorted(set(by_page) | {b.page for b in read.bookmarks}):
        marks = [b for b in read.bookmarks if b.page == number]
        titles = {_key(b.title) for b in marks}
        # The bookmarked heading's own line is already the section's name.
        blocks = [s for s in by_page.get(number, []) if _key(s.content) not in titles]
        ordered.extend(interleave(marks, blocks))
    return ordered


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _images(page: pdfium.PdfPage) -> tuple[int, float]:
    """How many images the page shows, and the share of the page they cover (summed: a scan
    cut into strips covers it as a whole one does)."""
    boxes = [box for _, box in page_objects(page, (pdfium_c.FPDF_PAGEOBJ_IMAGE,))]
    return len(boxes), min(1.0, sum(area(box) for box in boxes))
