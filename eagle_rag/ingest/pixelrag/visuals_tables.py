"""Ruled tables of a text-born PDF page: pdfplumber's table finder over the lines PDFium reads.

pdfplumber finds a ruled table from the page's horizontal and vertical edges (snapped, joined,
crossed into cells, the cells grouped into tables). Asked for a page's edges, pdfplumber has
pdfminer interpret the whole page first, every character included: ~0.11 s a grid page on
longdocs-dev, most of a chart-heavy report's visual extraction. Here the edges come from
PDFium's path segments (``ruled_grid.page_edges``, milliseconds) and go to pdfplumber's finder
as explicit lines, with its default tolerances; each cell's text is read from PDFium's text
layer by pdfplumber's rule: a character belongs to the cell holding its centre. The same tables
at ~0.013 s a page (``benchmarks.ruled_tables``).

Each table comes back with its box (normalised, top-left origin) and its cells as a Markdown
pipe table whose first row is the header, the form text chunks use for tables too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, cast

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pdfplumber.page import Page
from pdfplumber.table import Table, TableFinder

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp
from eagle_rag.ingest.pixelrag.pdf_objects import PageFrame, upright_textpage
from eagle_rag.ingest.pixelrag.ruled_grid import Edge, grid_possible, page_edges

MIN_ROWS = 2
MIN_COLUMNS = 2
# A ruled table draws lines: pages with fewer path objects hold none, and pages with very many
# are charts or drawings, where the finder makes tables of bar grids.
MIN_TABLE_PATHS = 6
MAX_TABLE_PATHS = 150

Cell = tuple[float, float, float, float]  # x0, top, x1, bottom in points, top-left origin
_Char = tuple[float, float, int, str]  # centre x, centre y (top-left origin), index, character


def table_sized(paths: int) -> bool:
    """Whether a page drawing this many path objects may hold a ruled table worth reading."""
    return MIN_TABLE_PATHS <= paths <= MAX_TABLE_PATHS


def path_count(page: pdfium.PdfPage, limit: int | None = None) -> int:
    """The page's path objects (in forms too), counted up to ``limit`` past which they are
    not counted on."""
    paths = page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=2)
    return sum(1 for _ in islice(paths, None if limit is None else limit + 1))


def ruled_table_boxes(page: pdfium.PdfPage) -> list[BBox]:
    """Where the page's ruled grids are (on the page as shown), for the text parser: a cell's
    text, a bold header row's above all, is no heading. Their cells are not read (the visuals
    do that). [] on pages the visuals read no table from (``table_sized``)."""
    if not table_sized(path_count(page, MAX_TABLE_PATHS)):
        return []
    edges = page_edges(page)
    if edges is None or not grid_possible(*edges):
        return []
    shown = PageFrame.of(page)
    return [_shown(shown, shown, table.bbox) for table in _grids(edges, shown)]


def ruled_tables(page: pdfium.PdfPage) -> list[tuple[BBox, str]]:
    """``[(bbox, markdown), ...]`` of the ruled tables on ``page`` (of at least MIN_ROWS rows
    with text and MIN_COLUMNS columns), top to bottom; [] at once for a page whose lines cannot
    form a grid (``ruled_grid``: most ruled pages) or that draws too much.

    The grid is found in the frame where the page's text stands upright (rows run across it,
    however /Rotate shows the page); each box is on the page as shown."""
    edges = page_edges(page)
    if edges is None or not grid_possible(*edges):
        return []
    shown = PageFrame.of(page)
    with upright_textpage(page) as (text_page, turn):
        upright = shown.turned(shown.rotation - turn)
        tables = _grids(edges, upright)
        chars = _chars(text_page, upright) if tables else []
    found = []
    for table in tables:
        inside = _inside(chars, table.bbox)
        rows = [[_text(inside, cell) for cell in row.cells] for row in table.rows]
        rows = [row for row in rows if any(row)]
        if len(rows) < MIN_ROWS or max(len(r) for r in rows) < MIN_COLUMNS:
            continue
        found.append((_shown(shown, upright, table.bbox), markdown(rows)))
    return sorted(found, key=lambda item: (item[0][1], item[0][0]))


def _grids(edges: tuple[list[Edge], list[Edge]], frame: PageFrame) -> list[Table]:
    """pdfplumber's tables over the page's lines, in ``frame``'s points."""
    lines = [_line(frame, a, b) for a, b in _ends(*edges)]
    settings = {
        "vertical_strategy": "explicit",
        "horizontal_strategy": "explicit",
        "explicit_vertical_lines": [line for line in lines if line["orientation"] == "v"],
        "explicit_horizontal_lines": [line for line in lines if line["orientation"] == "h"],
    }
    # Explicit lines given as objects never touch the page (only numeric ones read its box).
    return list(TableFinder(cast(Page, None), settings).tables)


def _shown(shown: PageFrame, frame: PageFrame, cell: Cell) -> BBox:
    """A table's box in ``frame``'s points on the page as shown."""
    x0, top, x1, bottom = cell
    width, height = frame.size
    box = clamp((x0 / width, top / height, x1 / width, bottom / height))
    return box if frame == shown else shown.box(*frame.rect(box))


def markdown(rows: list[list[str]]) -> str:
    """A pipe table; short rows are padded so every row has the header's width."""
    width = max(len(r) for r in rows)
    padded = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in padded[1:]]
    return "\n".join(lines)


Point = tuple[float, float]


def _ends(horizontal: list[Edge], vertical: list[Edge]) -> Iterator[tuple[Point, Point]]:
    """Each segment's two ends in user space."""
    for position, start, end in horizontal:
        yield (start, position), (end, position)
    for position, start, end in vertical:
        yield (position, start), (position, end)


def _line(frame: PageFrame, a: Point, b: Point) -> Any:
    """A PDFium segment as the edge object pdfplumber's finder takes, in ``frame``'s points
    (top-left origin): a quarter turn makes a page's horizontal rules vertical."""
    (x0, y0), (x1, y1) = frame.point(*a), frame.point(*b)
    if abs(y0 - y1) <= abs(x0 - x1):
        return _edge("h", min(x0, x1), max(x0, x1), y0, y0)
    return _edge("v", x0, x0, min(y0, y1), max(y0, y1))


def _edge(orientation: str, x0: float, x1: float, top: float, bottom: float) -> dict[str, Any]:
    return {
        "object_type": "line_edge",  # an "*_edge" object is taken as it is
        "orientation": orientation,
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "width": x1 - x0,
        "height": bottom - top,
    }


def _chars(text_page: pdfium.PdfTextPage, frame: PageFrame) -> list[_Char]:
    """The text layer's characters in its reading order, each with its centre in ``frame``'s
    points (top-left origin). PDFium's text layer includes the spaces it places between words
    (many PDFs draw no space glyph): a point where the next word starts, so in the cell of that
    word."""
    chars: list[_Char] = []
    for index in range(text_page.count_chars()):
        left, bottom, right, top = text_page.get_charbox(index)
        x, y = frame.point((left + right) / 2, (bottom + top) / 2)
        chars.append((x, y, index, chr(pdfium_c.FPDFText_GetUnicode(text_page.raw, index))))
    return chars


def _inside(chars: Sequence[_Char], box: Cell) -> list[_Char]:
    """The characters whose centre is in ``box`` (pdfplumber's rule: each in one cell)."""
    x0, top, x1, bottom = box
    return [c for c in chars if x0 <= c[0] < x1 and top <= c[1] < bottom]


def _text(chars: Sequence[_Char], cell: Cell | None) -> str:
    """A cell's characters in the text layer's order, a space where that order leaves the cell
    and comes back; "" for a missing cell."""
    if cell is None:
        return ""
    parts: list[str] = []
    previous = None
    for _, _, index, character in _inside(chars, cell):
        if previous is not None and index != previous + 1:
            parts.append(" ")
        parts.append(character)
        previous = index
    return " ".join("".join(parts).split()).replace("|", "\\|")
