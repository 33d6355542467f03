"""Test documents with known content and layout."""

from __future__ import annotations

from fpdf import FPDF

# Where the paragraph of interest is drawn on each page (mm on A4, 210 x 297).
PAGE_W, PAGE_H = 210.0, 297.0
LEFT, TOP, WIDTH, LINE = 20.0, 40.0, 170.0, 8.0

PAGES = (
    (
        "Inverter wiring",
        "The inverter wiring uses copper terminals rated for forty amperes. "
        "Tighten every terminal to two newton metres before power is applied.",
    ),
    (
        "Battery storage",
        "The battery cabinet keeps lithium modules between ten and thirty degrees. "
        "Ventilation fans start when the cabinet passes thirty degrees.",
    ),
)


def text_pdf() -> bytes:
    """Two pages, a heading and one paragraph each, the paragraph at a known place."""
    pdf = FPDF(format="A4", unit="mm")
    pdf.set_auto_page_break(False)
    for heading, body in PAGES:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.set_xy(LEFT, 20)
        pdf.cell(WIDTH, 10, heading)
        pdf.set_font("Helvetica", "", 12)
        pdf.set_xy(LEFT, TOP)
        pdf.multi_cell(WIDTH, LINE, body)
    return bytes(pdf.output())


def paragraph_box(lines: int = 2) -> list[float]:
    """The normalised [x0, y0, x1, y1] of a page's paragraph (top-left origin)."""
    return [
        round(LEFT / PAGE_W, 4),
        round(TOP / PAGE_H, 4),
        round((LEFT + WIDTH) / PAGE_W, 4),
        round((TOP + lines * LINE) / PAGE_H, 4),
    ]


MARKDOWN = b"""# Field guide

## Solar panels

Solar panels are cleaned twice a year with soft brushes and deionised water.

## Grounding

Every frame is bonded to the grounding bar with green conductors.
"""
