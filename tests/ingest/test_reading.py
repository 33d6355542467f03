"""The reading step of OCR'd pages: line order on skewed scans, and which margins are dropped.

The pages here are OcrPage values as the engine returns them (lines and layout regions with
normalised boxes), laid out like the scans that exposed each case, so the reading rules are
checked exactly; tests/ingest/test_ocr.py runs the real models end to end.
"""

from __future__ import annotations

import pytest

from eagle_rag.ingest.pixelrag.engine import OcrLine, OcrPage, Region
from eagle_rag.ingest.pixelrag.lines import Line, rows
from eagle_rag.ingest.pixelrag.margins import is_page_number, running_key
from eagle_rag.ingest.pixelrag.reading import page_blocks, to_sections

BODY = Region("text", (0.05, 0.15, 0.95, 0.85), 0.95)


def _page(lines: list[tuple[str, tuple[float, float, float, float]]], *regions: Region) -> OcrPage:
    return OcrPage(1240, 1754, 0, tuple(OcrLine(t, b, 0.99) for t, b in lines), (BODY, *regions))


def _text(pages: list[OcrPage]) -> list[str]:
    read = [(n, page_blocks(p, n)) for n, p in enumerate(pages, start=1)]
    return [s.heading or s.content for s in to_sections(read)]


def test_the_short_end_of_a_line_on_a_skewed_scan_stays_after_its_line() -> None:
    # A page turned ~1°: each long line's box is taller than its text, so "wards." (the end of
    # the paragraph) overlaps the line above it vertically; it sits under it, not beside it.
    page = _page(
        [
            ("To evaluate the role of a coordinator whose sole", (0.098, 0.196, 0.872, 0.231)),
            ("responsibility was to plan discharges from medical", (0.096, 0.218, 0.891, 0.252)),
            ("wards.", (0.094, 0.239, 0.171, 0.260)),
            ("An intervention study followed.", (0.094, 0.259, 0.864, 0.295)),
        ]
    )
    assert _text([page]) == [
        "To evaluate the role of a coordinator whose sole responsibility was to plan "
        "discharges from medical wards. An intervention study followed."
    ]


def test_pieces_of_one_row_are_still_read_left_to_right() -> None:
    left = Line("Total", (0.10, 0.30, 0.20, 0.32), 1)
    right = Line("42", (0.60, 0.301, 0.65, 0.321), 1)
    below = Line("Mean", (0.10, 0.34, 0.20, 0.36), 1)
    assert [[line.text for line in row] for row in rows([right, below, left])] == [
        ["Total", "42"],
        ["Mean"],
    ]


def test_a_one_off_header_is_kept_as_text_and_a_page_number_footer_dropped() -> None:
    # The layout model marks a one-page scan's top line (its title or number) "header".
    page = _page(
        [
            ("10158597", (0.10, 0.05, 0.25, 0.08)),
            ("The body of the page.", (0.10, 0.20, 0.80, 0.22)),
            ("- 3 -", (0.48, 0.93, 0.52, 0.95)),
        ],
        Region("header", (0.09, 0.04, 0.26, 0.09), 0.8),
        Region("footer", (0.45, 0.92, 0.55, 0.96), 0.8),
    )
    assert _text([page]) == ["10158597", "The body of the page."]


def test_a_running_head_repeated_on_every_page_is_dropped() -> None:
    head = Region("header", (0.05, 0.02, 0.95, 0.06), 0.9)
    pages = [
        _page(
            [
                (f"J Clin Med 2019; {n}: 101-110", (0.06, 0.03, 0.60, 0.05)),
                (f"Body text of page {n}.", (0.10, 0.20, 0.80, 0.22)),
            ],
            head,
        )
        for n in (1, 2, 3)
    ]
    assert _text(pages) == ["Body text of page 1.", "Body text of page 2.", "Body text of page 3."]


def test_scanned_pages_of_only_the_same_top_lines_keep_them() -> None:
    """A notice scanned twice: its two lines sit in the top band of both pages, so both were
    "running heads" and every page came out bare."""
    notice = [
        ("Safety notice: fault code E-30 means overheating.", (0.10, 0.03, 0.90, 0.05)),
        ("Wire the inverter with 6 mm2 copper cables.", (0.10, 0.055, 0.90, 0.075)),
    ]
    pages = [_page([*notice, (str(n), (0.49, 0.95, 0.51, 0.97))]) for n in (1, 2)]
    said = _text(pages)
    assert len([t for t in said if "E-30" in t]) == 2
    assert not any(t.strip() in ("1", "2") for t in said)


def test_a_blank_page_of_a_manual_still_drops_its_running_head() -> None:
    """A page left bare keeps its text only when nothing at all would be left: a manual's
    blank page (its running head alone) brought the head back as body text."""
    head = ("ACME Service Manual", (0.10, 0.03, 0.60, 0.05))
    pages = [_page([head, (f"Body text of page {n}.", (0.10, 0.20, 0.80, 0.22))]) for n in (1, 2)]
    pages.append(_page([head]))
    assert _text(pages) == ["Body text of page 1.", "Body text of page 2."]


def test_a_running_head_ocr_read_without_a_space_on_one_page_is_still_dropped() -> None:
    """OCR read "NorthernValley" on page 2: it matched no other page and stayed as text."""
    head = Region("header", (0.05, 0.02, 0.95, 0.06), 0.9)
    heads = {
        1: "Northern Valley Bulletin",
        2: "NorthernValley Bulletin",
        3: "Northern Valley Bulletin",
    }
    pages = [
        _page(
            [
                (heads[n], (0.06, 0.03, 0.60, 0.05)),
                (f"Body text of page {n}.", (0.10, 0.20, 0.80, 0.22)),
            ],
            head,
        )
        for n in (1, 2, 3)
    ]
    assert _text(pages) == ["Body text of page 1.", "Body text of page 2.", "Body text of page 3."]


def test_running_heads_and_page_numbers_the_layout_model_did_not_label_are_dropped() -> None:
    """The layout model called the head "header" on page 1 only and found no footer: the head
    stayed on page 2, and the page numbers were read into the text ("Left column | 2 | ...")."""
    pages = [
        _page(
            [
                ("CITY ENGINEERING DEPT", (0.35, 0.03, 0.65, 0.05)),
                (f"Body text of page {n}.", (0.10, 0.20, 0.80, 0.22)),
                (str(n), (0.49, 0.95, 0.51, 0.97)),
            ],
            *([Region("header", (0.34, 0.02, 0.66, 0.06), 0.8)] if n == 1 else []),
        )
        for n in (1, 2)
    ]
    assert _text(pages) == ["Body text of page 1.", "Body text of page 2."]
    # A one-off line in the band is text, as a one-off header is.
    alone = _page([("Memo 4471", (0.10, 0.03, 0.30, 0.05)), ("The body.", (0.1, 0.2, 0.8, 0.22))])
    assert _text([alone]) == ["Memo 4471", "The body."]


@pytest.mark.parametrize("text", ["12", "Page 3", "- 4 -", "3 / 10", "iv", "p. 7", "第3页"])
def test_page_numbers_are_recognised(text: str) -> None:
    assert is_page_number(text)


@pytest.mark.parametrize("text", ["10158597", "Introduction", "Table 2", "2019 Annual Report"])
def test_other_margin_text_is_not_a_page_number(text: str) -> None:
    assert not is_page_number(text)


def test_running_heads_match_whatever_their_numbers() -> None:
    assert running_key("Page 3 of  J Med") == running_key("page 14 of J Med")
    assert running_key("J Med") != running_key("N Engl J Med")


def test_on_a_page_twelve_screens_tall_a_title_region_does_not_take_the_next_line() -> None:
    # The top of a 875 x 7,452 scroll, as the engine read it: 1% of its height (the pad a line's
    # centre may fall outside a region by) is 75 pixels, three lines, so the title region, which
    # scores higher, claimed the paragraph's first line and the paragraph was cut in two.
    title = Region("title", (0.073, 0.0098, 0.611, 0.0150), 0.87)
    text = Region("text", (0.186, 0.0210, 0.918, 0.0296), 0.84)
    lines = [
        ("Quarterly Safety Report", (0.069, 0.0089, 0.616, 0.0154)),
        (
            "The plant recorded no lost time injuries this quarter. Forklift",
            (0.072, 0.0205, 0.929, 0.0246),
        ),
        ("inspections were completed on schedule.", (0.071, 0.0262, 0.599, 0.0301)),
    ]
    page = OcrPage(875, 7452, 0, tuple(OcrLine(t, b, 0.99) for t, b in lines), (title, text))
    blocks = page_blocks(page, 1)
    assert [(b.kind, b.text) for b in blocks] == [
        ("heading", "Quarterly Safety Report"),
        (
            "text",
            "The plant recorded no lost time injuries this quarter. Forklift inspections were "
            "completed on schedule.",
        ),
    ]


def _sized_page(title: str, region: str = "text") -> OcrPage:
    """A title set twice the body's size, which the layout model called ``region``."""
    lines = [
        (title, (0.10, 0.10, 0.60, 0.13)),
        ("The plant recorded no lost time injuries this quarter.", (0.10, 0.16, 0.90, 0.175)),
        ("Forklift inspections were completed on schedule and the", (0.10, 0.18, 0.90, 0.195)),
        ("audit found every valve, pump and seal in order.", (0.10, 0.20, 0.80, 0.215)),
    ]
    regions = (
        Region(region, (0.09, 0.09, 0.61, 0.14), 0.9),
        Region("text", (0.09, 0.155, 0.91, 0.22), 0.9),
    )
    return OcrPage(1240, 1754, 0, tuple(OcrLine(t, b, 0.99) for t, b in lines), regions)


def test_a_heading_the_layout_model_called_text_is_a_heading_by_its_size() -> None:
    blocks = page_blocks(_sized_page("Quarterly Safety Report"), 1)
    assert [b.kind for b in blocks] == ["heading", "text"]
    assert blocks[0].text == "Quarterly Safety Report"


@pytest.mark.parametrize(
    ("title", "region"),
    [
        ("The plant is closed.", "text"),  # a large sentence (a pull quote) is no heading
        ("Quarterly Safety Report", "figure"),  # a chart's big label stays the chart's text
        ("2024", "text"),  # a number alone names nothing
    ],
)
def test_large_text_that_is_no_heading_stays_text(title: str, region: str) -> None:
    blocks = page_blocks(_sized_page(title, region), 1)
    assert [b.kind for b in blocks] == ["text", "text"]
