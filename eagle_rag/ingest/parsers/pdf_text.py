"""A PDF page's text layer as positioned lines: text, normalised box, font size and boldness.

PDFium gives the page's characters in content order with generated line breaks; each line's box
is the union of its visible characters' boxes, mapped from PDF user space (bottom-left origin,
unrotated) to the page as displayed (top-left origin, /Rotate applied).
"""

from __future__ import annotations

import ctypes
import statistics
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp, unrotate

_FORCE_BOLD = 1 << 18  # PDF font descriptor flag
_BOLD_WEIGHT = 600


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
        unmapped = sum(
            1 for i in range(count) if pdfium_c.FPDFText_HasUnicodeMapError(textpage.raw, i) == 1
        )
        return TextLayer(lines, raw.replace("\r\n", "\n").replace("\r", "\n"), unmapped)
    finally:
        textpage.close()


def _chars(textpage: pdfium.PdfTextPage, count: int) -> str:
    """One Python character per PDFium character index (so boxes can be looked up by index)."""
    if count <= 0:
        return ""
    text = str(textpage.get_text_range(0, count))
    if len(text) == count:
        return text
    # Characters outside the BMP come back as surrogate pairs: read them one by one.
    return "".join(
        chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i) or 0xFFFD) for i in range(count)
    )


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
        box = clamp(
            (
                (left - self.left) / self.width,
                (top_y - top) / self.height,
                (right - self.left) / self.width,
                (top_y - bottom) / self.height,
            )
        )
        # /Rotate turns the displayed page clockwise: the same map as undoing a CCW turn.
        return unrotate(box, self.rotation) if self.rotation else box


def _lines(textpage: pdfium.PdfTextPage, raw: str, frame: _Frame) -> list[TextLine]:
    lines = []
    start = 0
    for end in [*(i for i, ch in enumerate(raw) if ch == "\n"), len(raw)]:
        segment = range(start, end)
        start = end + 1
        visible = [i for i in segment if not raw[i].isspace()]
        if not visible:
            continue
        text = " ".join(raw[segment.start : segment.stop].split())
        boxes = [frame.box(*textpage.get_charbox(i)) for i in visible]
        sample = visible[:: max(1, len(visible) // 4)][:5]
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
                float(statistics.median(sizes)) if sizes else 0.0,
                sum(_bold(textpage, i) for i in sample) * 2 > len(sample),
            )
        )
    return lines


def _bold(textpage: pdfium.PdfTextPage, index: int) -> bool:
    if pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= _BOLD_WEIGHT:
        return True
    flags = ctypes.c_int(0)
    buffer = ctypes.create_string_buffer(128)
    length = pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, buffer, 128, ctypes.byref(flags))
    name = buffer.value.decode("latin-1", "replace").lower() if length else ""
    return bool(flags.value & _FORCE_BOLD) or "bold" in name or "black" in name
