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

from collections.abc import Sequence
from typing import Any, cast

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pdfplumber.page import Page
from pdfplumber.table import TableFinder

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp
from eagle_rag.ingest.pixelrag.ruled_grid import grid_possible, page_edges

MIN_ROWS = 2
MIN_COLUMNS = 2

Cell = tuple[float, float, float, float]  # x0, top, x1, bottom in points, top-left origin
_Char = tuple[float, float, int, str]  # centre x, centre y (top-left origin), index, character


def ruled_tables(page: pdfium.PdfPage) -> list[tuple[BBox, str]]:
    """``[(bbox, markdown), ...]`` of the ruled tables on ``page`` (of at least MIN_ROWS rows
    with text and MIN_COLUMNS columns), top to bottom; [] at once for a page whose lines cannot
    form a grid (``ruled_grid``: most ruled pages) or that draws too much."""
    edges = page_edges(page)
    if edges is None or not grid_possible(*edges):
        return []
    width, height = page.get_size()
    horizontal = [_line("h", position, start, end, height) for position, start, end in edges[0]]
    vertical = [_line("v", position, start, end, height) for position, start, end in edges[1]]
    settings = {
        "vertical_strategy": "explicit",
        "horizontal_strategy": "explicit",
        "explicit_vertical_lines": vertical,
        "explicit_horizontal_lines": horizontal,
    }
    # Explicit lines given as objects never touch the page (only numeric ones read its box).
    tables = TableFinder(cast(Page, None), settings).tables
    if not tables:
        return []
    chars = list(_chars(page, height))
    found = []
    for table in tables:
        inside = _inside(chars, table.bbox)
        rows = [[_text(inside, cell) for cell in row.cells] for row in table.rows]
        rows = [row for row in rows if any(row)]
        if len(rows) < MIN_ROWS or max(len(r) for r in rows) < MIN_COLUMNS:
            continue
        x0, top, x1, bottom = table.bbox
        box = clamp((x0 / width, top / height, x1 / width, bottom / height))
        found.append((box, markdown(rows)))
    return sorted(found, key=lambda item: (item[0][1], item[0][0]))


def markdown(rows: list[list[str]]) -> str:
    """A pipe table; short rows are padded so every row has the header's width."""
    width = max(len(r) for r in rows)
    padded = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in padded[1:]]
    return "\n".join(lines)


def _line(orientation: str, position: float, start: float, end: float, height: float) -> Any:
    """A PDFium segment as the edge object pdfplumber's finder takes (top-left origin)."""
    if orientation == "h":
        top = height - position
        return _edge("h", start, end, top, top)
    return _edge("v", position, position, height - end, height - start)


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


def _chars(page: pdfium.PdfPage, height: float) -> list[_Char]:
    """The text layer's characters in its reading order, each with its centre (top-left
    origin). PDFium's text layer includes the spaces it places between words (many PDFs draw no
    space glyph): a point where the next word starts, so in the cell of that word."""
    chars: list[_Char] = []
    text_page = page.get_textpage()
    try:
        for index in range(text_page.count_chars()):
            left, bottom, right, top = text_page.get_charbox(index)
            character = chr(pdfium_c.FPDFText_GetUnicode(text_page.raw, index))
            chars.append(((left + right) / 2, height - (bottom + top) / 2, index, character))
    finally:
        text_page.close()
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
