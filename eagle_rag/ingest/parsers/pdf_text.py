"""A PDF page's text layer as positioned lines: text, normalised box, font size and boldness.

PDFium gives the page's characters in content order with generated line breaks; each line's box
is the union of its visible characters' boxes, mapped from PDF user space (bottom-left origin,
unrotated) to the page as displayed (top-left origin, /Rotate applied).
"""

from __future__ import annotations

import ctypes
import re
import statistics
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.ingest.pixelrag.geometry import BBox, unrotate

_FORCE_BOLD = 1 << 18  # PDF font descriptor flag
_BOLD_WEIGHT = 600
UNMAPPED_SAMPLE = 200
_FONT_NAME_BYTES = 128
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class TextLine:
    text: str
    bbox: BBox
    size: float
    bold: bool

    @property
    def height(self) -> float:
        return self.bbox[3] - self.bbox[1]


@dataclass(frozen=True, slots=True)
class TextLayer:
    """One page: its lines, the raw text (for the probe) and how many glyphs lack Unicode."""

    lines: tuple[TextLine, ...]
    text: str
    unmapped: int


def read_text_layer(page: pdfium.PdfPage) -> TextLayer:
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        raw = _chars(textpage, count)
        frame = _Frame.of(page)
        lines = tuple(_lines(textpage, raw, frame))
        return TextLayer(
            lines, raw.replace("\r\n", "\n").replace("\r", "\n"), _unmapped(textpage, count)
        )
    finally:
        textpage.close()


def _unmapped(textpage: pdfium.PdfTextPage, count: int) -> int:
    """Glyphs without a Unicode mapping, estimated from an even sample of the page (reading
    every character costs more than the rest of the page together)."""
    if count <= 0:
        return 0
    step = max(1, count // UNMAPPED_SAMPLE)
    sample = range(0, count, step)
    bad = sum(1 for i in sample if pdfium_c.FPDFText_HasUnicodeMapError(textpage.raw, i) == 1)
    return round(bad * count / len(sample))


def _chars(textpage: pdfium.PdfTextPage, count: int) -> str:
    """One Python character per PDFium character index (so boxes can be looked up by index).

    PDFium gives each half of a character outside the BMP an index of its own, and some fonts
    map glyphs to lone surrogates; either way a surrogate is not text (it cannot even be
    encoded as UTF-8, so it would fail the document at the first write): it becomes U+FFFD,
    one per index, which the probe counts as garbage."""
    if count <= 0:
        return ""
    text = str(textpage.get_text_range(0, count))
    if len(text) != count:  # pairs decoded into one character: read index by index
        text = "".join(
            chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i) or 0xFFFD) for i in range(count)
        )
    return _SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True, slots=True)
class _Frame:
    left: float
    bottom: float
    width: float
    height: float
    rotation: int

    @classmethod
    def of(cls, page: pdfium.PdfPage) -> _Frame:
        left, bottom, right, top = page.get_bbox()
        return cls(
            left, bottom, max(right - left, 1e-6), max(top - bottom, 1e-6), page.get_rotation()
        )

    def box(self, left: float, bottom: float, right: float, top: float) -> BBox:
        top_y = self.bottom + self.height
        x0, x1 = (left - self.left) / self.width, (right - self.left) / self.width
        y0, y1 = (top_y - top) / self.height, (top_y - bottom) / self.height
        box = (max(0.0, x0), max(0.0, y0), min(1.0, x1), min(1.0, y1))
        # /Rotate turns the displayed page clockwise: the same map as undoing a CCW turn.
        return unrotate(box, self.rotation) if self.rotation else box


def _lines(textpage: pdfium.PdfTextPage, raw: str, frame: _Frame) -> list[TextLine]:
    """One line per generated line break. A line's box spans the loose boxes (font ascent to
    descent) of its first, middle and last visible characters: they share the baseline, and one
    lookup per character would cost several times the rest of the parse. Font size and weight
    are read on the same few characters."""
    lines = []
    offset = 0
    name = ctypes.create_string_buffer(_FONT_NAME_BYTES)  # one buffer for the page's lines
    for segment in raw.split("\n"):
        start, offset = offset, offset + len(segment) + 1
        text = " ".join(segment.split())
        if not text:
            continue
        first = start + len(segment) - len(segment.lstrip())
        last = start + len(segment.rstrip()) - 1
        middle = _visible_near(raw, (first + last) // 2, last)
        sample = sorted({first, middle, last})
        boxes = [frame.box(*textpage.get_charbox(i, loose=True)) for i in sample]
        sizes = [pdfium_c.FPDFText_GetFontSize(textpage.raw, i) for i in sample]
        lines.append(
            TextLine(
                text,
                (
                    min(b[0] for b in boxes),
                    min(b[1] for b in boxes),
                    max(b[2] for b in boxes),
                    max(b[3] for b in boxes),
                ),
                float(statistics.median(sizes)),
                _bold(textpage, middle, name),
            )
        )
    return lines


def _visible_near(raw: str, index: int, last: int) -> int:
    while index < last and raw[index].isspace():
        index += 1
    return index


def _bold(textpage: pdfium.PdfTextPage, index: int, name: ctypes.Array[ctypes.c_char]) -> bool:
    if pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= _BOLD_WEIGHT:
        return True
    flags = ctypes.c_int(0)
    length = pdfium_c.FPDFText_GetFontInfo(
        textpage.raw, index, name, _FONT_NAME_BYTES, ctypes.byref(flags)
    )
    font = name.value.decode("latin-1", "replace").lower() if length else ""
    return bool(flags.value & _FORCE_BOLD) or "bold" in font or "black" in font
