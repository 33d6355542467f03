"""Running heads, running feet and page numbers of a PDF's text layer: dropped before structure.

A line in the top or bottom band of its page is a running head (or foot) when the same text sits
in that band on another page too, its numbers changed only where they follow the page ("ACME
Corp. | 2023 Annual Report", "Table of Contents" links, "Page 4 of 80"), or when it is only a
page number. A numbered heading that lands in the band of two pages ("1.3.2 Water use", "2.3.2
Water use") is no running head. Left in, running heads split paragraphs that cross a page,
become typographic "headings" and repeat on every chunk; the page number is the chunk's
``page`` already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from eagle_rag.ingest.pixelrag.margins import is_running, running_margins

if TYPE_CHECKING:
    from eagle_rag.ingest.parsers.pdf_structure import PageLines
    from eagle_rag.ingest.parsers.pdf_text import TextLine

# The share of the page height, at the top and at the bottom, where running heads are set.
BAND = 0.09


def _in_band(line: TextLine) -> bool:
    return line.bbox[1] < BAND or line.bbox[3] > 1 - BAND


def without_running_lines(pages: Sequence[PageLines]) -> list[PageLines]:
    """The pages without their running heads, feet and page numbers."""
    running = running_margins(
        [(page.page, [line.text for line in page.lines if _in_band(line)]) for page in pages]
    )

    def running_line(page: PageLines, line: TextLine) -> bool:
        return _in_band(line) and is_running(page.page, line.text, running)

    return [
        replace(page, lines=tuple(line for line in page.lines if not running_line(page, line)))
        for page in pages
    ]
