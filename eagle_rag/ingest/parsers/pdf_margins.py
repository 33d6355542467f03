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

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from eagle_rag.ingest.pixelrag.margins import (
    is_page_number,
    is_running,
    margin_text,
    running_margins,
)

if TYPE_CHECKING:
    from eagle_rag.ingest.parsers.pdf_structure import PageLines
    from eagle_rag.ingest.parsers.pdf_text import TextLine

# The share of the page height, at the top and at the bottom, where running heads are set.
BAND = 0.09
# A line set this much larger than the body text is a heading: it is a running head only when
# its very text repeats ("Chapter 1", "Chapter 2", "Chapter 3" opening pages 1-3 changed only
# where the page number did, and were dropped as one head numbered with its page).
HEADING_SIZE = 1.2


def _in_band(line: TextLine) -> bool:
    return line.bbox[1] < BAND or line.bbox[3] > 1 - BAND


def _body_size(pages: Sequence[PageLines]) -> float:
    """The size most of the text is set in (by characters)."""
    sizes = sorted((line.size, len(line.text)) for page in pages for line in page.lines)
    half, seen = sum(n for _, n in sizes) / 2, 0
    for size, count in sizes:
        seen += count
        if seen >= half:
            return size
    return 0.0


def without_running_lines(pages: Sequence[PageLines]) -> list[PageLines]:
    """The pages without their running heads, feet and page numbers."""
    band = [(page.page, [line.text for line in page.lines if _in_band(line)]) for page in pages]
    running = running_margins(band)
    repeated = Counter(text for _, texts in band for text in {margin_text(t) for t in texts})
    heading_size = HEADING_SIZE * _body_size(pages)

    def running_line(page: PageLines, line: TextLine) -> bool:
        if not (_in_band(line) and is_running(page.page, line.text, running)):
            return False
        heading = line.size > heading_size and not is_page_number(line.text)
        return not heading or repeated[margin_text(line.text)] > 1

    kept = [
        replace(page, lines=tuple(line for line in page.lines if not running_line(page, line)))
        for page in pages
    ]
    if any(page.lines for page in kept):
        return kept
    # Pages of a few lines set high (a notice printed on two pages, a slip) lie wholly in the
    # band, and the same lines on each page made them all "running": the document lost its
    # every line and failed as having no text. Only when nothing at all is left: a blank page
    # of a manual keeps dropping its running head.
    return [
        replace(page, lines=tuple(line for line in page.lines if not is_page_number(line.text)))
        for page in pages
    ]
