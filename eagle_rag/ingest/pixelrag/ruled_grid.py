"""A PDF page's horizontal and vertical lines as PDFium draws them, and whether they could hold
a ruled table, in milliseconds.

``page_edges`` gives the lines the table finder works on (visuals_tables). Most pages that carry
rules hold no grid (a 10-K underlines its figures; none of NETFLIX's 26 ruled pages held a
table), so ``may_hold_ruled_table`` tells first whether a table is possible at all: a table of
at least two rows and two columns needs a column line crossing three row lines and a row line
crossing three column lines. It looks for both with tolerances wider than the finder's
(pdfplumber's snap, join and intersection tolerance: 3 pt each), so it only leaves out pages
where the finder could not find such a table either.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

# Wider than pdfplumber's snap + join + intersection tolerances together (3 pt each).
REACH = 10.0
# Lines this close are one: pdfplumber snaps parallel edges that chain within 3 pt into one
# (a thick rule drawn as a thin box is one line, not three). Counted over the crossing lines
# only, never fewer lines than pdfplumber counts.
SAME = 3.0
FLAT = 0.01  # a segment whose ends differ by less than this in y (x) is horizontal (vertical)
# pdfplumber drops shorter edges before it merges any (``edge_min_length_prefilter``): the sides
# of a thin filled rule (a 10-K's underlines) are no vertical lines.
MIN_EDGE = 1.0
MIN_LINES = 3  # two rows (columns) are bounded by three horizontal (vertical) lines
# Pages drawing more segments than this are drawings (a map, a plot of points), not tables.
MAX_SEGMENTS = 20_000

_MOVETO = pdfium_c.FPDF_SEGMENT_MOVETO

Edge = tuple[float, float, float]  # (position, start, end) along the other axis


def may_hold_ruled_table(page: pdfium.PdfPage) -> bool:
    """False when the page's horizontal and vertical segments cannot cross in a grid of three
    lines each way, or when it draws more than MAX_SEGMENTS; True otherwise."""
    edges = page_edges(page)
    return edges is not None and grid_possible(*edges)


def grid_possible(horizontal: list[Edge], vertical: list[Edge]) -> bool:
    """Whether these lines (``page_edges``) can cross in a grid of three lines each way."""
    return _crosses(vertical, horizontal) and _crosses(horizontal, vertical)


def page_edges(page: pdfium.PdfPage) -> tuple[list[Edge], list[Edge]] | None:
    """The page's horizontal and vertical segments (page points, bottom-left origin), at least
    MIN_EDGE long; None when it draws more than MAX_SEGMENTS segments."""
    horizontal: list[Edge] = []
    vertical: list[Edge] = []
    count = 0
    for item in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=2):
        for (x0, y0), (x1, y1) in _segments(item):
            count += 1
            if count > MAX_SEGMENTS:
                return None
            if abs(y0 - y1) < FLAT and abs(x0 - x1) >= MIN_EDGE:
                horizontal.append((y0, min(x0, x1), max(x0, x1)))
            elif abs(x0 - x1) < FLAT and abs(y0 - y1) >= MIN_EDGE:
                vertical.append((x0, min(y0, y1), max(y0, y1)))
    return horizontal, vertical


def _crosses(lines: list[Edge], across: list[Edge]) -> bool:
    """Whether one line of ``lines``, drawn in one stroke or in pieces that join, crosses
    MIN_LINES distinct lines of ``across``.

    A table of two rows has a column line running down through three row lines (the cells of
    its two rows meet at a corner on it, and pdfplumber joins their sides into one edge), and a
    table of two columns a row line running through three column lines. Zebra stripes, a
    10-K's shaded rows and underlines, a chart's bars standing apart never do."""
    if len(lines) < MIN_LINES or len(across) < MIN_LINES:
        return False
    for low_position, high_position, low, high in _joined(lines):
        positions = {
            position
            for position, start, end in across
            if low - REACH <= position <= high + REACH
            and start - REACH <= high_position
            and low_position <= end + REACH
        }
        if _distinct(positions) >= MIN_LINES:
            return True
    return False


def _joined(lines: list[Edge]) -> Iterator[tuple[float, float, float, float]]:
    """Lines at (nearly) one position joined where their pieces meet or nearly meet:
    ``(lowest position, highest position, start, end)``; wider than pdfplumber's snap and join,
    so it joins whatever pdfplumber would."""
    ordered = sorted(lines)
    group: list[Edge] = []
    for line in [*ordered, None]:
        if line is not None and (not group or line[0] - group[-1][0] <= REACH):
            group.append(line)
            continue
        pieces = sorted((start, end) for _, start, end in group)
        low_position, high_position = group[0][0], group[-1][0]
        low, high = pieces[0]
        for start, end in pieces[1:]:
            if start > high + REACH:
                yield low_position, high_position, low, high
                low = start
            high = max(high, end)
        yield low_position, high_position, low, high
        group = [line] if line is not None else []


def _distinct(values: set[float]) -> int:
    """How many lines these coordinates are, counting values more than SAME apart as two."""
    lines, last = 0, None
    for value in sorted(values):
        if last is None or value - last > SAME:
            lines += 1
        last = value
    return lines


def _segments(item: pdfium.PdfObject) -> Iterator[tuple[tuple[float, float], tuple[float, float]]]:
    """Each straight piece of a path in page points: line segments, closing segments, and the
    control polygon of curves (pdfminer, and so pdfplumber, makes edges of those too)."""
    raw = item.raw
    matrices = [item.get_matrix()]
    container = getattr(item, "container", None)
    while container is not None:  # a path inside a form: through every form's matrix
        matrices.append(container.get_matrix())
        container = getattr(container, "container", None)

    def on_page(x: float, y: float) -> tuple[float, float]:
        for matrix in matrices:
            x, y = matrix.on_point(x, y)
        return x, y

    x, y = ctypes.c_float(), ctypes.c_float()
    start = previous = None
    for index in range(pdfium_c.FPDFPath_CountSegments(raw)):
        segment = pdfium_c.FPDFPath_GetPathSegment(raw, index)
        if not pdfium_c.FPDFPathSegment_GetPoint(segment, x, y):
            continue
        point = on_page(x.value, y.value)
        if pdfium_c.FPDFPathSegment_GetType(segment) == _MOVETO or previous is None:
            start = point
        else:
            yield previous, point
        previous = point
        if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None and start != point:
            yield point, start
            previous = start
