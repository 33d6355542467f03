"""Visuals of a PDF: embedded images (figures), ruled tables, and page tiles.

pypdfium2 gives each embedded image's bounds on the page; the figure is cut from the rendered
page (so vector overlays and masks look as the reader sees them) and its text is what the text
layer holds inside it and in a caption band above or below. Pages read by OCR (scans) become
page tiles: their picture is their content. Ruled tables come from pdfplumber (visuals_tables).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from eagle_rag.ingest.parsers.pdf_repair import readable
from eagle_rag.ingest.parsers.pdfium_lock import PDFIUM
from eagle_rag.ingest.pixelrag.geometry import BBox, area, clamp, overlap
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual, VisualKind, crop, encode
from eagle_rag.ingest.pixelrag.visuals_tables import ruled_tables
from eagle_rag.ingest.pixelrag.visuals_vector import vector_figure_boxes
from eagle_rag.ingest.progress import PageCallback

RENDER_DPI = 150
# An image over this share of the page is the page itself (a scan, a background), not a figure.
PAGE_SIZED = 0.8
# A ruled table draws lines: pages with fewer path objects are not worth pdfplumber's time, and
# pages with very many are charts or drawings, where pdfplumber is slowest and finds bar grids.
MIN_TABLE_PATHS = 6
MAX_TABLE_PATHS = 150
CAPTION_BAND = 0.08  # of the page height, above and below a figure
CAPTION = re.compile(r"^\s*(fig(ure)?\.?|table|chart|graph|diagram|图|表)\s*\S", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PdfVisualOptions:
    tiles: str = "scanned"  # none | scanned | all
    tables: bool = True
    min_side: float = 0.08
    max_per_page: int = 8
    max_pages: int = 2000


def pdf_visuals(
    data: bytes,
    ocr_pages: frozenset[int],
    options: PdfVisualOptions,
    on_page: PageCallback | None = None,
) -> list[FoundVisual]:
    """Every visual of the PDF, page by page in reading order.

    ``on_page(done, total)`` hears of each page as it is done; it may raise to stop the
    extraction (a cancelled task: a 500-page scan stops within a page, not after all of them).
    """
    with PDFIUM:  # PDFium is not thread-safe (pdfium_lock.py)
        return _pdf_visuals(data, ocr_pages, options, on_page)


def _pdf_visuals(
    data: bytes,
    ocr_pages: frozenset[int],
    options: PdfVisualOptions,
    on_page: PageCallback | None,
) -> list[FoundVisual]:
    data, _ = readable(data, "visuals.pdf")  # the bytes the parser read (a damaged file's rewrite)
    document = pdfium.PdfDocument(data)
    try:
        found: list[FoundVisual] = []
        table_pages: list[int] = []
        pages = min(len(document), options.max_pages)
        for number in range(1, pages + 1):
            page = document[number - 1]
            try:
                scanned = number in ocr_pages
                found.extend(_page_visuals(page, number, scanned, options))
                paths = _path_count(page) if options.tables and not scanned else 0
                if MIN_TABLE_PATHS <= paths <= MAX_TABLE_PATHS:
                    table_pages.append(number)
            finally:
                page.close()
            if on_page is not None:
                on_page(number, pages)
        if table_pages:
            found.extend(_tables(document, data, table_pages, options))
            found = _without_table_duplicates(found)
        return sorted(found, key=lambda v: (v.page, v.bbox[1], v.bbox[0]))
    finally:
        document.close()


def _page_visuals(
    page: pdfium.PdfPage, number: int, scanned: bool, options: PdfVisualOptions
) -> list[FoundVisual]:
    width, height = page.get_size()
    tile = options.tiles == "all" or (options.tiles == "scanned" and scanned)
    figures = [] if scanned else _all_figures(page, width, height, options)
    if not tile and not figures:
        return []
    rendered = _render(page)
    text_page = page.get_textpage()
    try:
        found = [
            _visual(
                "image",
                number,
                box,
                rendered,
                _text_in(text_page, box, width, height),
                _caption(text_page, box, width, height),
            )
            for box in figures[: options.max_per_page]
        ]
        if tile:
            page_text = _text_in(text_page, (0.0, 0.0, 1.0, 1.0), width, height)
            found.append(_visual("tile", number, (0.0, 0.0, 1.0, 1.0), rendered, page_text))
        return found
    finally:
        text_page.close()


def _figure_boxes(
    page: pdfium.PdfPage, width: float, height: float, options: PdfVisualOptions
) -> Iterator[BBox]:
    """Embedded images big enough to be figures (no icons, bullets or page backgrounds)."""
    seen: list[BBox] = []
    for image in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = image.get_bounds()
        box = clamp((left / width, 1 - top / height, right / width, 1 - bottom / height))
        side_w, side_h = box[2] - box[0], box[3] - box[1]
        if min(side_w, side_h) < options.min_side or area(box) > PAGE_SIZED or box in seen:
            continue
        seen.append(box)
        yield box


def _all_figures(
    page: pdfium.PdfPage, width: float, height: float, options: PdfVisualOptions
) -> list[BBox]:
    """Embedded images, then vector charts that are not one of those images."""
    images = list(_figure_boxes(page, width, height, options))
    charts = [
        box
        for box in vector_figure_boxes(page, width, height, options.min_side)
        if not any(overlap(box, image) > 0.5 * area(box) for image in images)
    ]
    return images + charts


def _without_table_duplicates(found: list[FoundVisual]) -> list[FoundVisual]:
    """A ruled table's lines also look like a vector chart: the table wins."""
    tables = [v for v in found if v.kind == "table"]

    def duplicate(visual: FoundVisual) -> bool:
        return visual.kind == "image" and any(
            t.page == visual.page
            and overlap(t.bbox, visual.bbox) > 0.5 * min(area(t.bbox), area(visual.bbox))
            for t in tables
        )

    return [v for v in found if not duplicate(v)]


def _tables(
    document: pdfium.PdfDocument, data: bytes, pages: list[int], options: PdfVisualOptions
) -> Iterator[FoundVisual]:
    for number, tables in ruled_tables(data, pages).items():
        page = document[number - 1]
        try:
            rendered = _render(page)
            for box, markdown in tables[: options.max_per_page]:
                text_page = page.get_textpage()
                try:
                    caption = _caption(text_page, box, *page.get_size())
                finally:
                    text_page.close()
                yield _visual("table", number, box, rendered, markdown, caption)
        finally:
            page.close()


def _visual(
    kind: VisualKind, number: int, box: BBox, rendered: Image.Image, text: str, caption: str = ""
) -> FoundVisual:
    picture = rendered if kind == "tile" else crop(rendered, box)
    image, media, width, height = encode(picture, kind)
    return FoundVisual(kind, number, box, image, media, width, height, text.strip(), caption)


def _render(page: pdfium.PdfPage) -> Image.Image:
    image: Image.Image = page.render(scale=RENDER_DPI / 72).to_pil()
    return image


def _text_in(text_page: pdfium.PdfTextPage, box: BBox, width: float, height: float) -> str:
    left, right = box[0] * width, box[2] * width
    top, bottom = (1 - box[1]) * height, (1 - box[3]) * height
    text: str = text_page.get_text_bounded(left=left, bottom=bottom, right=right, top=top)
    return " ".join(text.split())


def _caption(text_page: pdfium.PdfTextPage, box: BBox, width: float, height: float) -> str:
    """A line starting "Figure 3", "Table 2", "图 1"... just below or above the region."""
    # The whole width: a caption is often set flush left under a centred figure.
    below = (0.0, box[3], 1.0, min(1.0, box[3] + CAPTION_BAND))
    above = (0.0, max(0.0, box[1] - CAPTION_BAND), 1.0, box[1])
    for band in (below, above):
        left, right = band[0] * width, band[2] * width
        top, bottom = (1 - band[1]) * height, (1 - band[3]) * height
        raw: str = text_page.get_text_bounded(left=left, bottom=bottom, right=right, top=top)
        for line in raw.splitlines():
            if CAPTION.match(line):
                return " ".join(line.split())
    return ""


def _path_count(page: pdfium.PdfPage) -> int:
    return sum(1 for _ in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=2))
