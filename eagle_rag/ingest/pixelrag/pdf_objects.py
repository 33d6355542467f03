"""A PDF page's objects with their boxes on the page, including those inside Form XObjects.

PDFium gives an object that sits inside a Form XObject (a figure placed by LaTeX's
``\\includegraphics``, a chart pasted from a spreadsheet or a slide tool) its bounds in the
form's own coordinates, not the page's: read as page boxes they land anywhere, often off the
page, and the figure is cut from the wrong place or not found at all. Each nested object's
bounds are mapped through the matrix of every form that holds it.

Bounds are in PDF user space (bottom-left origin, the page unrotated); boxes are on the page as
displayed (top-left origin, /Rotate applied: ``PageFrame``), the frame of the rendered page and
of the text layer's lines. The text page is read where the page's text stands upright
(``upright_textpage``): that is where PDFium orders its lines right, where a table's rows run
across and where a caption is "below" its figure, however /Rotate shows the page.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp, unrotate

# Forms inside forms inside forms are rare; deeper ones are drawings, not figures.
MAX_DEPTH = 3
ANGLE_SAMPLE = 64  # characters whose angle tells which way the page's text stands

Rect = tuple[float, float, float, float]  # left, bottom, right, top in PDF user space


@dataclass(frozen=True, slots=True)
class PageFrame:
    """A page's visible box in user space and its /Rotate (degrees the page is displayed
    turned clockwise): maps user-space rectangles to boxes on the displayed page and back."""

    left: float
    bottom: float
    width: float
    height: float
    rotation: int

    @classmethod
    def of(cls, page: pdfium.PdfPage) -> PageFrame:
        left, bottom, right, top = page.get_bbox()
        return cls(
            left, bottom, max(right - left, 1e-6), max(top - bottom, 1e-6), page.get_rotation()
        )

    def turned(self, rotation: int) -> PageFrame:
        """The same page shown with ``rotation`` instead (the frame its text stands upright
        in, for one)."""
        return PageFrame(self.left, self.bottom, self.width, self.height, rotation % 360)

    @property
    def size(self) -> tuple[float, float]:
        """Width and height in points of the page as this frame shows it."""
        turned = self.rotation % 180 == 90
        return (self.height, self.width) if turned else (self.width, self.height)

    def point(self, x: float, y: float) -> tuple[float, float]:
        """A user-space point in points from this frame's top-left corner (not clamped: the
        table finder's hot loop, once per character)."""
        u = (x - self.left) / self.width
        v = (self.bottom + self.height - y) / self.height
        turned = self.rotation % 360
        if turned == 90:
            return (1 - v) * self.height, u * self.width
        if turned == 180:
            return (1 - u) * self.width, (1 - v) * self.height
        if turned == 270:
            return v * self.height, (1 - u) * self.width
        return u * self.width, v * self.height

    def unrotated(self, left: float, bottom: float, right: float, top: float) -> BBox:
        """The user-space rectangle normalised with a top-left origin, the page unrotated."""
        top_y = self.bottom + self.height
        x0, x1 = (left - self.left) / self.width, (right - self.left) / self.width
        return clamp((x0, (top_y - top) / self.height, x1, (top_y - bottom) / self.height))

    def box(self, left: float, bottom: float, right: float, top: float) -> BBox:
        """The user-space rectangle on the page as displayed."""
        box = self.unrotated(left, bottom, right, top)
        # /Rotate turns the displayed page clockwise: the same map as undoing a CCW turn.
        return unrotate(box, self.rotation) if self.rotation else box

    def rect(self, box: BBox) -> Rect:
        """A box on the displayed page as a user-space rectangle (what PDFium's text page
        takes)."""
        x0, y0, x1, y1 = unrotate(box, -self.rotation)
        top_y = self.bottom + self.height
        return (
            self.left + x0 * self.width,
            top_y - y1 * self.height,
            self.left + x1 * self.width,
            top_y - y0 * self.height,
        )


def page_objects(
    page: pdfium.PdfPage, types: Sequence[int], max_depth: int = MAX_DEPTH
) -> Iterator[tuple[pdfium.PdfObject, BBox]]:
    """Objects of ``types`` (``FPDF_PAGEOBJ_*``), top-level and nested, each with its box
    normalised to the page as displayed (top-left origin, /Rotate applied, clamped)."""
    frame = PageFrame.of(page)
    for item in page.get_objects(filter=tuple(types), max_depth=max_depth):
        yield item, frame.box(*page_bounds(item))


def page_bounds(item: pdfium.PdfObject) -> Rect:
    """``(left, bottom, right, top)`` in page points, through the forms that hold ``item``."""
    left, bottom, right, top = item.get_bounds()
    container = getattr(item, "container", None)
    while container is not None:
        left, bottom, right, top = container.get_matrix().on_rect(left, bottom, right, top)
        container = getattr(container, "container", None)
    return left, bottom, right, top


@contextmanager
def upright_textpage(page: pdfium.PdfPage) -> Iterator[tuple[pdfium.PdfTextPage, int]]:
    """The page's text page read in the frame where most of its text stands upright, with the
    degrees counter-clockwise that turn the displayed page into that frame (0 for most pages;
    90 for upright text shown on a /Rotate 90 page). Character boxes stay in user space."""
    shown = page.get_rotation()
    textpage = page.get_textpage()
    upright = _upright_rotation(textpage, shown)
    if upright != shown:
        textpage.close()
        page.set_rotation(upright)  # PDFium reads the page's /Rotate when it loads the text
        try:
            textpage = page.get_textpage()
        finally:
            page.set_rotation(shown)
    try:
        yield textpage, (shown - upright) % 360
    finally:
        textpage.close()


def _upright_rotation(textpage: pdfium.PdfTextPage, shown: int) -> int:
    """The /Rotate that shows most sampled characters upright (their angle, which PDFium
    gives clockwise in user space, rounded to a quarter turn); ``shown`` when the page has no
    visible character."""
    count = textpage.count_chars()
    quarters: Counter[int] = Counter()
    for index in range(0, count, max(1, count // ANGLE_SAMPLE)):
        if chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, index) or 32).isspace():
            continue
        angle = pdfium_c.FPDFText_GetCharAngle(textpage.raw, index)
        if angle >= 0:  # -1: no such character
            quarters[round(-math.degrees(angle) / 90) % 4 * 90] += 1
    return quarters.most_common(1)[0][0] if quarters else shown


def bounded_text(textpage: pdfium.PdfTextPage, rect: Rect, upright: int) -> str:
    """The text of the characters inside a user-space rectangle, a line break where the text
    page has one between them. ``upright``: the /Rotate that stands the text upright
    (``upright_textpage``). PDFium's own bounded text breaks lines only where the baseline's
    height in user space changes: text set sideways (a landscape page turned back by /Rotate)
    came out as one line, a caption glued to the next paragraph."""
    left, bottom, right, top = rect
    if upright == 0:
        text: str = textpage.get_text_bounded(left=left, bottom=bottom, right=right, top=top)
        return text
    parts: list[str] = []
    gap = ""  # what the text page has between the last character taken and this one
    for index in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage.raw, index)
        character = "\ufffd" if not code or 0xD800 <= code <= 0xDFFF else chr(code)
        x0, y0, x1, y1 = textpage.get_charbox(index)
        if not (left <= (x0 + x1) / 2 <= right and bottom <= (y0 + y1) / 2 <= top):
            gap = "\n" if character in "\r\n" or gap == "\n" else " "
            continue
        if parts and gap:
            parts.append(gap)
        parts.append(character)
        gap = ""
    return "".join(parts)
