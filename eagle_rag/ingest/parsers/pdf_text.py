"""A PDF page's text layer as positioned lines: text, normalised box, font size and boldness.

PDFium gives the page's characters in content order with generated line breaks; each line's box
is the union of its visible characters' boxes, mapped from PDF user space (bottom-left origin,
unrotated) to the page as displayed (top-left origin, /Rotate applied).

PDFium orders a line's pieces, and lines that start level with each other, by their x on the
page as displayed: on a page displayed turned a quarter (/Rotate 90 over upright text) every
line starts at the same height and the page came out last line first, heading last. The text
page is therefore read in the frame where the text stands upright (``upright_textpage``), and
only the boxes are mapped to the page as displayed. Lines inside a ruled table's grid (the
visuals' table finder, ``visuals_tables``) are marked: a bold header row is no heading.
"""

from __future__ import annotations

import ctypes
import re
import statistics
from dataclasses import dataclass, replace

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.ingest.parsers.pdf_bidi import has_right_to_left, reading_order
from eagle_rag.ingest.pixelrag.geometry import BBox, center, contains
from eagle_rag.ingest.pixelrag.pdf_objects import PageFrame, upright_textpage
from eagle_rag.ingest.pixelrag.visuals_tables import ruled_table_boxes

_FORCE_BOLD = 1 << 18  # PDF font descriptor flag
_BOLD_WEIGHT = 600
UNMAPPED_SAMPLE = 200
_FONT_NAME_BYTES = 128
# A bold line of this many pieces this many font sizes apart is a table's header row.
MIN_CELLS = 3
CELL_GAP = 1.5
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class TextLine:
    text: str
    bbox: BBox
    size: float
    bold: bool
    in_table: bool = False  # in a ruled table's cells: table text, never a heading
    turn: int = 0  # degrees counter-clockwise that stand the page as shown upright (/Rotate)

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
    frame = PageFrame.of(page)
    tables = ruled_table_boxes(page)
    with upright_textpage(page) as (textpage, turn):
        count = textpage.count_chars()
        raw = _chars(textpage, count)
        lines = _in_tables(_lines(textpage, raw, frame, turn), tables)
        return TextLayer(
            lines, raw.replace("\r\n", "\n").replace("\r", "\n"), _unmapped(textpage, count)
        )


def _in_tables(lines: list[TextLine], tables: list[BBox]) -> tuple[TextLine, ...]:
    """The lines, those whose centre is inside a ruled table marked as table text."""
    if not tables:
        return tuple(lines)
    return tuple(
        replace(line, in_table=True)
        if any(contains(table, center(line.bbox)) for table in tables)
        else line
        for line in lines
    )


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


def _lines(textpage: pdfium.PdfTextPage, raw: str, frame: PageFrame, turn: int) -> list[TextLine]:
    """One line per generated line break. A line's box spans the loose boxes (font ascent to
    descent) of its first, middle and last visible characters: they share the baseline, and one
    lookup per character would cost several times the rest of the parse. Font size and weight
    are read on the same few characters."""
    lines = []
    offset = 0
    name = ctypes.create_string_buffer(_FONT_NAME_BYTES)  # one buffer for the page's lines
    upright = frame.turned(frame.rotation - turn)
    for segment in raw.split("\n"):
        start, offset = offset, offset + len(segment) + 1
        text = " ".join(segment.split())
        if not text:
            continue
        first = start + len(segment) - len(segment.lstrip())
        last = start + len(segment.rstrip()) - 1
        if has_right_to_left(segment):  # the line break's own box would place it inside
            visible = raw[first : last + 1]
            text = " ".join(reading_order(visible, _centres(textpage, first, visible)).split())
        middle = _visible_near(raw, (first + last) // 2, last)
        sample = sorted({first, middle, last})
        boxes = [frame.box(*textpage.get_charbox(i, loose=True)) for i in sample]
        size = float(
            statistics.median(pdfium_c.FPDFText_GetFontSize(textpage.raw, i) for i in sample)
        )
        bold = _bold(textpage, middle, name)
        lines.append(
            TextLine(
                text,
                (
                    min(b[0] for b in boxes),
                    min(b[1] for b in boxes),
                    max(b[2] for b in boxes),
                    max(b[3] for b in boxes),
                ),
                size,
                bold,
                in_table=bold and _table_row(textpage, raw, (first, last), size, upright),
                turn=turn,
            )
        )
    return lines


def _centres(textpage: pdfium.PdfTextPage, start: int, segment: str) -> list[float]:
    """Each character's horizontal centre on the upright page; a space, drawn or generated by
    PDFium, has an empty box at its place on the line."""
    centres = []
    for index in range(start, start + len(segment)):
        left, _, right, _ = textpage.get_charbox(index)
        centres.append((left + right) / 2)
    return centres


def _table_row(
    textpage: pdfium.PdfTextPage,
    raw: str,
    span: tuple[int, int],
    size: float,
    upright: PageFrame,
) -> bool:
    """Whether a (bold) line is a table's header row laid out without rules: MIN_CELLS or more
    pieces apart by gaps over CELL_GAP times its font size (a heading's words sit a space apart).
    Only bold lines are measured: a box per gap costs more than the rest of a line."""
    first, last = span
    width = upright.size[0]
    cells, index = 1, first
    while index <= last:
        if not raw[index].isspace():
            index += 1
            continue
        end = _visible_near(raw, index, last)
        before = upright.box(*textpage.get_charbox(index - 1))
        after = upright.box(*textpage.get_charbox(end))
        cells += (after[0] - before[2]) * width > CELL_GAP * size
        index = end + 1
    return cells >= MIN_CELLS


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
