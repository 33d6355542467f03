"""Visuals of a PDF: embedded images (figures), ruled tables, and page tiles.

pypdfium2 gives each embedded image's bounds on the page; the figure is cut from the rendered
page (so vector overlays and masks look as the reader sees them) and its text is what the text
layer holds inside it and in a caption band above or below. Pages read by OCR (scans) become
page tiles: their picture is their content, and their figure and table regions (found by the
parser's layout pass, visuals_regions) are cropped as figures and tables. A text-born page with
drawn paths but no figure found in its objects gets a layout pass of its own (bounded by a
per-document time budget), and a raster figure with little text layer over it is read by OCR
(``picture_ocr``, within its own budget). Ruled tables come from pdfplumber's table finder over
PDFium's lines (visuals_tables), on pages whose lines can form a grid (ruled_grid).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from eagle_rag.ingest.parsers.pdf_margins import BAND as RUNNING_HEAD_BAND
from eagle_rag.ingest.parsers.pdf_render import render
from eagle_rag.ingest.parsers.pdf_repair import readable
from eagle_rag.ingest.parsers.pdfium_lock import PDFIUM
from eagle_rag.ingest.pixelrag.cpu_budget import CpuBudget
from eagle_rag.ingest.pixelrag.engine import Region
from eagle_rag.ingest.pixelrag.geometry import BBox, area, overlap
from eagle_rag.ingest.pixelrag.pdf_objects import (
    PageFrame,
    bounded_text,
    page_objects,
    upright_textpage,
)
from eagle_rag.ingest.pixelrag.picture_ocr import PictureOcr
from eagle_rag.ingest.pixelrag.ruled_grid import may_hold_ruled_table
from eagle_rag.ingest.pixelrag.visuals_found import (
    CAPTION,
    WHOLE_PAGE,
    FoundVisual,
    VisualKind,
    crop,
    encode,
)
from eagle_rag.ingest.pixelrag.visuals_regions import RegionVisual, region_visuals
from eagle_rag.ingest.pixelrag.visuals_tables import path_count, ruled_tables, table_sized
from eagle_rag.ingest.pixelrag.visuals_vector import vector_figure_boxes
from eagle_rag.ingest.progress import PageCallback

RENDER_DPI = 150
# An image over this share of the page is the page itself (a scan, a background), not a figure.
PAGE_SIZED = 0.8
CAPTION_BAND = 0.08  # of the page height, above and below a figure
# An unlabelled chart's title: the nearest lines above it, over its width and a little more
# (titles are often set flush left of the plot area), trimmed.
TITLE_LINES = 3
TITLE_SLACK = 0.03
TITLE_CHARS = 200
PROSE_ENDS = (".", ";", "。", "；")  # a line that ends a sentence is no title (a title may ask)
FULL_WIDTH = 0.5  # a chart this wide has no text column beside it
# A text-born page with at least this many path objects and no figure found may hold a chart
# drawn in pieces: the layout model looks at it, within LAYOUT_BUDGET_S CPU seconds per
# document (cpu_budget: CPU, not wall time).
MIN_DRAWN_PATHS = 12
LAYOUT_BUDGET_S = 6.0
# Ruled tables take ~0.013 s of CPU a grid page (benchmarks.ruled_tables); a document's pages
# past this many CPU seconds keep their text but give no table (a drawing cannot cost minutes).
TABLE_BUDGET_S = 4.0

LayoutModel = Callable[[Image.Image], Sequence[Region]]


@dataclass(slots=True)
class LayoutPass:
    """The layout model for text-born pages, with the document's remaining time budget."""

    model: LayoutModel
    budget: CpuBudget = field(default_factory=lambda: CpuBudget(LAYOUT_BUDGET_S))

    def regions(self, rendered: Image.Image) -> Sequence[Region]:
        return self.budget.spend(lambda: self.model(rendered), ())


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
    regions: Mapping[int, Sequence[RegionVisual]] | None = None,
    layout: LayoutModel | None = None,
    on_page: PageCallback | None = None,
    pictures: PictureOcr | None = None,
    turns: Mapping[int, int] | None = None,
) -> list[FoundVisual]:
    """Every visual of the PDF, page by page in reading order. ``regions``: the figure and
    table regions the parser's layout pass found on OCR'd pages; ``turns``: the OCR'd pages
    read turned upright (their tiles and crops are stored upright); ``layout``: the layout model
    for text-born pages whose drawn charts are not one object (None: no such pass);
    ``pictures``: reads raster figures with no text layer over them (None: not read).

    ``on_page(done, total)`` hears of each page as it is done; it may raise to stop the
    extraction (a cancelled task: a 500-page scan stops within a page, not after all of them).
    """
    with PDFIUM:  # PDFium is not thread-safe (pdfium_lock.py)
        layout_pass = LayoutPass(layout) if layout is not None else None
        models = _Models(layout_pass, pictures)
        scans = _Scans(ocr_pages, regions or {}, turns or {})
        return _pdf_visuals(data, scans, options, models, on_page)


def _pdf_visuals(
    data: bytes,
    scans: _Scans,
    options: PdfVisualOptions,
    models: _Models,
    on_page: PageCallback | None,
) -> list[FoundVisual]:
    data, _ = readable(data, "visuals.pdf")  # the bytes the parser read (a damaged file's rewrite)
    document = pdfium.PdfDocument(data)
    try:
        found: list[FoundVisual] = []
        tables: list[FoundVisual] = []
        table_budget = CpuBudget(TABLE_BUDGET_S)
        pages = min(len(document), options.max_pages)
        for number in range(1, pages + 1):
            page = document[number - 1]
            try:
                scanned = number in scans.pages
                paths = 0 if scanned else path_count(page)
                hints = _PageHints(
                    scanned,
                    scans.regions.get(number, ()),
                    scans.turns.get(number, 0),
                    paths,
                    models,
                )
                found.extend(_page_visuals(page, number, hints, options))
                if options.tables and table_sized(paths):  # the grid check: ruled_tables
                    tables.extend(_tables(page, number, options, table_budget))
            finally:
                page.close()
            if on_page is not None:
                on_page(number, pages)
        found = _without_table_duplicates(found, tables) + tables
        return sorted(found, key=lambda v: (v.page, v.bbox[1], v.bbox[0]))
    finally:
        document.close()


@dataclass(frozen=True, slots=True)
class _Scans:
    """What the parser's OCR pass recorded of the document's scanned pages."""

    pages: frozenset[int]
    regions: Mapping[int, Sequence[RegionVisual]]  # figure and table regions by page
    turns: Mapping[int, int]  # degrees that turn a page upright, by page


@dataclass(frozen=True, slots=True)
class _Models:
    """The document's optional model passes, each with its own CPU budget."""

    layout: LayoutPass | None  # text-born pages' charts drawn in pieces
    pictures: PictureOcr | None  # raster figures' words


@dataclass(frozen=True, slots=True)
class _PageHints:
    scanned: bool
    regions: Sequence[RegionVisual]  # the parser's layout regions (OCR'd pages)
    turn: int  # degrees that turn an OCR'd page upright
    paths: int  # drawn path objects (text-born pages)
    models: _Models


def _page_visuals(
    page: pdfium.PdfPage, number: int, hints: _PageHints, options: PdfVisualOptions
) -> list[FoundVisual]:
    tile = options.tiles == "all" or (options.tiles == "scanned" and hints.scanned)
    figures = [] if hints.scanned else _all_figures(page, options)
    regions = [r for r in hints.regions if _region_sized(r.bbox, options)]
    drawn = not hints.scanned and not figures and hints.paths >= MIN_DRAWN_PATHS
    layout = hints.models.layout
    looks = drawn and layout is not None
    if not tile and not figures and not regions and not looks:
        return []
    rendered = _render(page)
    with _page_text(page) as text:
        turn = hints.turn if hints.scanned else text.turn

        def title(box: BBox) -> str:
            """A text page region's caption or title, from the text layer (a scan's keep
            theirs)."""
            return "" if hints.scanned else _caption(text, box)

        def figure_text(box: BBox, raster: bool) -> str:
            """The text layer inside a figure; for a raster one with little of it, what OCR
            reads in its pixels (a chart's labels, a screenshot's words)."""
            own = text.inside(box)
            pictures = hints.models.pictures
            if not raster or pictures is None:
                return own
            picture = crop(rendered, box)
            return pictures.text(picture.rotate(turn, expand=True) if turn else picture, own=own)

        if looks and layout is not None:
            regions = region_visuals(
                layout.regions(rendered),
                text.inside,
                number,
                min_side=options.min_side,
                max_regions=options.max_per_page,
            )
        found = [
            _visual("image", number, box, rendered, figure_text(box, raster), title(box), turn)
            for box, raster in figures[: options.max_per_page]
        ]
        found += [
            _visual(r.kind, number, r.bbox, rendered, r.text, r.caption or title(r.bbox), turn)
            for r in regions[: options.max_per_page - len(found)]
        ]
        if tile:
            page_text = text.inside(WHOLE_PAGE)
            found.append(_visual("tile", number, WHOLE_PAGE, rendered, page_text, turn=turn))
        return found


def _region_sized(box: BBox, options: PdfVisualOptions) -> bool:
    return min(box[2] - box[0], box[3] - box[1]) >= options.min_side


def _figure_boxes(page: pdfium.PdfPage, options: PdfVisualOptions) -> Iterator[BBox]:
    """Embedded images big enough to be figures (no icons, bullets or page backgrounds), also
    those inside Form XObjects, where papers' included figures sit (``pdf_objects``)."""
    seen: list[BBox] = []
    for _, box in page_objects(page, (pdfium_c.FPDF_PAGEOBJ_IMAGE,)):
        side_w, side_h = box[2] - box[0], box[3] - box[1]
        if min(side_w, side_h) < options.min_side or area(box) > PAGE_SIZED or box in seen:
            continue
        seen.append(box)
        yield box


def _all_figures(page: pdfium.PdfPage, options: PdfVisualOptions) -> list[tuple[BBox, bool]]:
    """Embedded images, then vector charts that are not one of those images; each box with
    whether it is raster (an image: its words are pixels) or drawn."""
    images = list(_figure_boxes(page, options))
    charts = [
        box
        for box in vector_figure_boxes(page, options.min_side)
        if not any(overlap(box, image) > 0.5 * area(box) for image in images)
    ]
    return [(box, True) for box in images] + [(box, False) for box in charts]


def _without_table_duplicates(
    found: list[FoundVisual], tables: list[FoundVisual]
) -> list[FoundVisual]:
    """A ruled table's lines also look like a vector chart, and the layout model may call it a
    table too: the ruled table (with its cells) wins."""

    def duplicate(visual: FoundVisual) -> bool:
        return visual.kind != "tile" and any(
            t.page == visual.page
            and overlap(t.bbox, visual.bbox) > 0.5 * min(area(t.bbox), area(visual.bbox))
            for t in tables
        )

    return [v for v in found if not duplicate(v)]


def _tables(
    page: pdfium.PdfPage, number: int, options: PdfVisualOptions, budget: CpuBudget
) -> list[FoundVisual]:
    none: list[tuple[BBox, str]] = []
    found = budget.spend(lambda: ruled_tables(page), none)[: options.max_per_page]
    if not found:
        return []
    rendered = _render(page)
    with _page_text(page) as text:
        captions = [_caption(text, box, table=True) for box, _ in found]
    return [
        _visual("table", number, box, rendered, markdown, caption, text.turn)
        for (box, markdown), caption in zip(found, captions, strict=True)
    ]


def _visual(
    kind: VisualKind,
    number: int,
    box: BBox,
    rendered: Image.Image,
    text: str,
    caption: str = "",
    turn: int = 0,
) -> FoundVisual:
    picture = rendered if kind == "tile" else crop(rendered, box)
    image, media, width, height = encode(picture, kind, turn)
    return FoundVisual(kind, number, box, image, media, width, height, text.strip(), caption)


def _render(page: pdfium.PdfPage) -> Image.Image:
    """The page at RENDER_DPI, under the parser's pixel cap (a poster is not 656 megapixels)."""
    return render(page, RENDER_DPI)


@dataclass(frozen=True, slots=True)
class _PageText:
    """A text-born page's text layer, read where its text stands upright, found by a box on the
    page as shown (``shown``) or as the text stands (``upright``: where "below a figure" is)."""

    page: pdfium.PdfTextPage
    shown: PageFrame
    upright: PageFrame

    @property
    def turn(self) -> int:
        """Degrees counter-clockwise that stand a crop of the page as shown upright."""
        return (self.shown.rotation - self.upright.rotation) % 360

    def inside(self, box: BBox) -> str:
        """The text inside a box on the page as shown, on one line."""
        return " ".join(self._bounded(self.shown.rect(box)).split())

    def as_read(self, box: BBox) -> BBox:
        """A box on the page as shown, on the page turned the way its text stands."""
        return self.upright.box(*self.shown.rect(box))

    def lines(self, band: BBox) -> list[str]:
        """The lines inside a band of the upright page, top first."""
        return self._bounded(self.upright.rect(band)).splitlines()

    def _bounded(self, rect: tuple[float, float, float, float]) -> str:
        return bounded_text(self.page, rect, self.upright.rotation)


@contextmanager
def _page_text(page: pdfium.PdfPage) -> Iterator[_PageText]:
    shown = PageFrame.of(page)
    with upright_textpage(page) as (text_page, turn):
        yield _PageText(text_page, shown, shown.turned(shown.rotation - turn))


def _caption(text: _PageText, shown_box: BBox, *, table: bool = False) -> str:
    """The nearest line starting "Figure 3", "Table 2", "图 1"... just below or above the region
    (for a table, a table's label before a figure's: the caption of the figure above a table
    is often within reach too); else, for an unlabelled chart, its title (``_title_above``)."""
    box = text.as_read(shown_box)
    # The whole width: a caption is often set flush left under a centred figure.
    below = (0.0, box[3], 1.0, min(1.0, box[3] + CAPTION_BAND))
    above = (0.0, max(0.0, box[1] - CAPTION_BAND), 1.0, box[1])
    # Nearest first: down from the region's foot, then up from its head.
    lines = [
        *text.lines(below),
        *reversed(text.lines(above)),
    ]
    labelled = [match for match in map(CAPTION.match, lines) if match]
    if table:
        labelled.sort(key=lambda match: not _names_a_table(match))  # stable: nearest first
    if labelled:
        return " ".join(labelled[0].string.split())
    return _title_above(text, box)


def _names_a_table(label: re.Match[str]) -> bool:
    return label.group(1).lower() in ("table", "表")


def _title_above(text: _PageText, box: BBox) -> str:
    """The lines printed just above a chart, across its width: reports, slides and filings
    title their charts there without a "Figure n" label ("Views of China's growing military
    power", one title over each panel of a grid of small charts), and that title is what a
    question about the chart names. At most TITLE_LINES lines (the nearest), TITLE_CHARS; none
    when the nearest line ends a sentence."""
    # Not from the top margin, where the running head is (pdf_margins drops it from the text).
    top = max(RUNNING_HEAD_BAND, box[1] - CAPTION_BAND)
    if top >= box[1]:
        return ""
    if box[2] - box[0] >= FULL_WIDTH:  # no column beside it: whole lines, not cut words
        band = (0.0, top, 1.0, box[1])
    else:
        band = (max(0.0, box[0] - TITLE_SLACK), top, min(1.0, box[2] + TITLE_SLACK), box[1])
    lines = [" ".join(line.split()) for line in text.lines(band)]
    lines = [line for line in lines if line]
    if lines and lines[-1].endswith(PROSE_ENDS):
        # The end of a paragraph, not a title: a table under body text was captioned by it.
        return ""
    title = " ".join(lines[-TITLE_LINES:])
    return title[:TITLE_CHARS].strip()


def may_hold_table(page: pdfium.PdfPage) -> bool:
    """Whether a text-born page's lines may form a ruled table: the pages whose tables are read
    (the extraction checks the path count, and ``ruled_tables`` the grid, on pages it has open)."""
    return table_sized(path_count(page)) and may_hold_ruled_table(page)
