"""A PDF's outline (bookmarks): the author's headings, each placed where its destination points.

A bookmark names a page and, nearly always, a height on it (``/XYZ left top zoom``, ``/FitH
top``...). A page that holds the end of one section and the start of the next must not be
filed whole under the later bookmark: each bookmark opens its section just above the first
block printed below the height it points at. A bookmark without a height opens its page.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.plugins.payloads import TextSection

MAX_DEPTH = 6
# A destination points at (or a little above) the top of its heading's line.
TOP_SLACK = 0.01


@dataclass(frozen=True, slots=True)
class Bookmark:
    title: str
    level: int
    page: int  # 1-based
    top: float | None = None  # the height it points at, normalised from the page's top


def read_outline(document: pdfium.PdfDocument) -> list[Bookmark]:
    marks = []
    pages = len(document)
    try:
        for item in document.get_toc(max_depth=MAX_DEPTH):
            title = (item.get_title() or "").strip()
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            if title and index is not None and dest is not None:
                top = _top_on(document, dest, index) if index < pages else None
                marks.append(Bookmark(title, item.level + 1, index + 1, top))
    except Exception:  # a broken outline costs headings, not the document
        return []
    return marks


def _top_on(document: pdfium.PdfDocument, dest: pdfium.PdfDest, index: int) -> float | None:
    """One bookmark's height; a destination PDFium cannot read costs its height, not the
    outline (one bad bookmark dropped every other)."""
    try:
        return _top(dest, document.get_page_size(index)[1])
    except Exception:
        return None


def _top(dest: pdfium.PdfDest, page_height: float) -> float | None:
    """The height the destination points at, from the page's top (None: not given)."""
    mode, view = dest.get_view()
    if mode == pdfium_c.PDFDEST_VIEW_XYZ:
        has_x, has_y, has_zoom = pdfium_c.FPDF_BOOL(), pdfium_c.FPDF_BOOL(), pdfium_c.FPDF_BOOL()
        x, y, zoom = pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT()
        found = pdfium_c.FPDFDest_GetLocationInPage(
            dest,
            ctypes.byref(has_x),
            ctypes.byref(has_y),
            ctypes.byref(has_zoom),
            ctypes.byref(x),
            ctypes.byref(y),
            ctypes.byref(zoom),
        )
        top = y.value if found and has_y.value else None
    elif mode in (pdfium_c.PDFDEST_VIEW_FITH, pdfium_c.PDFDEST_VIEW_FITBH) and view:
        top = view[0]
    elif mode == pdfium_c.PDFDEST_VIEW_FITR and len(view) == 4:
        top = max(view[1], view[3])
    else:
        top = None
    if top is None or page_height <= 0:
        return None
    return min(1.0, max(0.0, 1.0 - float(top) / page_height))


def interleave(marks: Sequence[Bookmark], blocks: Sequence[TextSection]) -> list[TextSection]:
    """One page's bookmarks (as headings) among its blocks (in reading order): each bookmark
    before the first block that starts below the height it points at."""
    waiting = list(marks)
    placed: list[TextSection] = []

    def open_up_to(height: float) -> None:
        while waiting and (waiting[0].top is None or waiting[0].top <= height + TOP_SLACK):
            mark = waiting.pop(0)
            placed.append(TextSection("", heading=mark.title, level=mark.level, page=mark.page))

    open_up_to(float("-inf"))  # those without a height open the page
    for block in blocks:
        top = _block_top(block)
        if top is not None:
            open_up_to(top)
        placed.append(block)
    open_up_to(float("inf"))
    return placed


def _block_top(block: TextSection) -> float | None:
    tops = [box.bbox[1] for box in block.boxes if box.page == block.page]
    return min(tops, default=None)
