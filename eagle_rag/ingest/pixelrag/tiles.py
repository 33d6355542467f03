"""Tall pages (a full-length screenshot, a receipt, a long scroll) read in overlapping bands.

rapidocr fits a page's long side to 2,000 pixels before it looks for text: a 1,170 by 15,000
screenshot becomes 156 by 2,000, and its 40-pixel text 5 pixels high, which reads as garbage or
not at all. A page half as tall again as that limit and over twice as tall as it is wide is read
instead in bands as tall as the limit allows (full width, so no line is cut sideways), each
overlapping the next by enough for a line cut at one band's edge to be whole in the other. A
line or region belongs to the band whose own share holds its centre, so each is read once.
Wide pages are not banded: cutting them would cut every line of text.
"""

from __future__ import annotations

from dataclasses import dataclass

# A page taller than this many times its width, and this many times the OCR input, is banded
# (a little shrinking costs nothing legible; reading a band twice costs a band's time).
BAND_ASPECT = 2.0
BAND_OVER_INPUT = 1.5
# Consecutive bands share this share of a band's height (at least MIN_OVERLAP pixels): more
# than the tallest line a page of that width plausibly holds.
OVERLAP_SHARE = 0.15
MIN_OVERLAP = 160


@dataclass(frozen=True, slots=True)
class Band:
    """Rows ``top`` to ``bottom`` of the page; it owns what is centred from ``own_top`` to
    ``own_bottom``."""

    top: int
    bottom: int
    own_top: int
    own_bottom: int

    def owns(self, center_row: float) -> bool:
        return self.own_top <= center_row < self.own_bottom


def bands(width: int, height: int, max_side: int) -> list[Band]:
    """The bands a ``width`` by ``height`` page is read in: one, the whole page, unless it is
    tall enough to lose its text when fitted to ``max_side``."""
    if height <= BAND_OVER_INPUT * max_side or height <= BAND_ASPECT * width:
        return [Band(0, height, 0, height)]
    size = max(max_side, width)  # a band at least as tall as the page is wide
    overlap = max(MIN_OVERLAP, int(size * OVERLAP_SHARE))
    tops = [0]
    while tops[-1] + size < height:  # the last band ends at the page's foot
        tops.append(min(tops[-1] + size - overlap, height - size))
    result = []
    for index, top in enumerate(tops):
        # The boundary between two bands' shares sits half an overlap into the later band, so
        # a line cut by either band's edge is owned by the band that holds it whole.
        own_top = 0 if index == 0 else top + overlap // 2
        own_bottom = tops[index + 1] + overlap // 2 if index + 1 < len(tops) else height
        result.append(Band(top, min(height, top + size), own_top, own_bottom))
    return result
