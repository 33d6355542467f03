"""Ruled tables read from PDFium's lines by pdfplumber's finder: the grid check sends only pages
whose lines can form a table of two rows and two columns, and the tables read are those
pdfplumber reads from the same page by itself (pages made with fpdf2)."""

from __future__ import annotations

import io
from collections.abc import Callable

import pdfplumber
import pypdfium2 as pdfium
import pytest
from fpdf import FPDF

from eagle_rag.ingest.pixelrag import ruled_grid
from eagle_rag.ingest.pixelrag.ruled_grid import may_hold_ruled_table
from eagle_rag.ingest.pixelrag.visuals_tables import ruled_tables
from tests.ingest import visual_docs as vd

ROWS = (("Quarter", "High", "Low"), ("First", "69.50", "45.26"), ("Second", "71.80", "52.10"))
CELL_W, CELL_H, LEFT, TOP = 40.0, 8.0, 20.0, 40.0


def _page(draw: Callable[[FPDF], None]) -> bytes:
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "", 10)
    draw(pdf)
    return bytes(pdf.output())


def _cell_text(pdf: FPDF, row: int, column: int) -> None:
    pdf.text(LEFT + column * CELL_W + 2, TOP + row * CELL_H + 6, ROWS[row][column])


def _cells_drawn_one_by_one(pdf: FPDF) -> None:
    """A grid whose cells are separate touching boxes (no line crosses the whole table)."""
    for row in range(len(ROWS)):
        for column in range(3):
            pdf.rect(LEFT + column * CELL_W, TOP + row * CELL_H, CELL_W, CELL_H)
            _cell_text(pdf, row, column)


def _shaded_rows_apart(pdf: FPDF) -> None:
    """A 10-K's look: every other row shaded, its cells as filled boxes, rows standing apart."""
    pdf.set_fill_color(220, 230, 240)
    for row in range(len(ROWS)):
        top = TOP + row * CELL_H * 2  # a row's height of white between shaded rows
        for column in range(3):
            pdf.rect(LEFT + column * CELL_W, top, CELL_W, CELL_H, style="F")
            pdf.text(LEFT + column * CELL_W + 2, top + 6, ROWS[row][column])


def _underlined_figures(pdf: FPDF) -> None:
    """Figures underlined as financial statements do: horizontal rules only."""
    for row in range(len(ROWS)):
        for column in range(3):
            _cell_text(pdf, row, column)
            x = LEFT + column * CELL_W
            y = TOP + row * CELL_H + 7
            pdf.line(x + 1, y, x + CELL_W - 1, y)


def _bars_apart(pdf: FPDF) -> None:
    """A bar chart: bars standing apart on one axis line."""
    pdf.set_fill_color(30, 90, 200)
    axis = TOP + 60
    for index, height in enumerate((50, 30, 40, 20)):
        pdf.rect(LEFT + index * 30, axis - height, 20, height, style="F")
    pdf.line(LEFT - 5, axis, LEFT + 125, axis)


def _first_page(data: bytes) -> pdfium.PdfPage:
    return pdfium.PdfDocument(data)[0]


@pytest.mark.parametrize("draw", [_cells_drawn_one_by_one], ids=["cells one by one"])
def test_a_grid_is_sent_and_read(draw: Callable[[FPDF], None]) -> None:
    data = _page(draw)
    assert may_hold_ruled_table(_first_page(data))
    [(box, markdown)] = ruled_tables(_first_page(data))
    assert "| First | 69.50 | 45.26 |" in markdown
    assert markdown.splitlines()[0] == "| Quarter | High | Low |"
    left, top, width, height = LEFT / 210, TOP / 297, 3 * CELL_W / 210, 3 * CELL_H / 297  # A4, mm
    assert box == pytest.approx((left, top, left + width, top + height), abs=0.01)


def _wrapped_and_hostile_cells(pdf: FPDF) -> None:
    """fpdf2's table: a cell whose text wraps over three lines, a cell holding a pipe."""
    with pdf.table(col_widths=(30, 60)) as table:
        for row in (("Part", "Note"), ("Valve", LONG_NOTE), ("Seal", "A | B")):
            cells = table.row()
            for value in row:
                cells.cell(value)


LONG_NOTE = "Replace the valve every twelve months or after two thousand hours of running time."


def test_cells_read_in_reading_order_as_pdfplumber_reads_them() -> None:
    """The same cells and words as pdfplumber reading the page by itself: a wrapped cell's lines
    in order, a pipe escaped so the Markdown row keeps its columns."""
    data = _page(_wrapped_and_hostile_cells)
    [(_, markdown)] = ruled_tables(_first_page(data))
    assert markdown.splitlines() == [
        "| Part | Note |",
        "| --- | --- |",
        f"| Valve | {LONG_NOTE} |",
        "| Seal | A \\| B |",
    ]
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        [table] = pdf.pages[0].extract_tables()
    assert [[" ".join((c or "").split()) for c in row] for row in table] == [
        ["Part", "Note"],
        ["Valve", LONG_NOTE],
        ["Seal", "A | B"],
    ]


def test_a_ruled_table_of_a_report_is_sent() -> None:
    document = pdfium.PdfDocument(vd.report_pdf())
    assert may_hold_ruled_table(document[1])  # page 2: the ruled maintenance table
    assert not may_hold_ruled_table(document[0])  # page 1: a raster chart, no lines


def _words_placed_apart(pdf: FPDF) -> None:
    """A grid whose first cell's words are drawn one by one, no space glyph between them (how
    many 10-Ks set text): PDFium places the word break."""
    for row in range(len(ROWS)):
        for column in range(3):
            pdf.rect(LEFT + column * CELL_W, TOP + row * CELL_H, CELL_W, CELL_H)
            if (row, column) != (0, 0):
                _cell_text(pdf, row, column)
    pdf.text(LEFT + 2, TOP + 6, "Fiscal")
    pdf.text(LEFT + 2 + pdf.get_string_width("Fiscal") + 1.2, TOP + 6, "quarter")


def test_words_drawn_apart_keep_their_space() -> None:
    data = _page(_words_placed_apart)
    [(_, markdown)] = ruled_tables(_first_page(data))
    assert markdown.splitlines()[0] == "| Fiscal quarter | High | Low |"


@pytest.mark.parametrize(
    "draw",
    [_shaded_rows_apart, _underlined_figures, _bars_apart],
    ids=["shaded rows apart", "underlined figures", "bars apart"],
)
def test_lines_that_form_no_grid_are_not_sent(draw: Callable[[FPDF], None]) -> None:
    data = _page(draw)
    assert not may_hold_ruled_table(_first_page(data))
    assert ruled_tables(_first_page(data)) == []  # the finder, asked anyway, finds no table


def test_a_page_drawing_too_much_is_a_drawing_not_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _page(_cells_drawn_one_by_one)
    monkeypatch.setattr(ruled_grid, "MAX_SEGMENTS", 3)
    assert not may_hold_ruled_table(_first_page(data))
    assert ruled_tables(_first_page(data)) == []
