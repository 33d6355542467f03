"""Does a PDF page have a usable text layer, or must it be read from its pixels?

A page is read from its text layer when it has enough characters for its size, few of them are
garbage (U+FFFD, private-use glyphs, controls: what a font without a ToUnicode map or a broken
OCR layer gives), and it is not a scan under a stamp. Otherwise it is OCR'd, when it shows
something to read: an image, or glyphs whose text is garbage (they render as legible letters).
A page with neither text nor images is blank and costs nothing.

A scan under a stamp is a page an image covers for the most part, whose text layer is far
sparser than a page of text or sits only in the margins: an ECF header ("Case 1:20-cv-01234
Document 45 Filed 03/12/21 Page 3 of 17"), a Bates number, a fax header printed over a scanned
page. Its text layer is the stamp, not the page. A text-born page with a big photo or a
full-page background keeps its text layer: it has a page's worth of text outside the margins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from eagle_rag.ingest.pixelrag.geometry import BBox

# Characters per A4-sized area (595 × 842 pt) below which a page counts as having no text:
# a scan with a stamped page number or a one-word caption has a text layer, but not the page's.
MIN_CHARS_PER_A4 = 25
# Under an image that covers the page, a text layer this sparse is a stamp: a page of text has
# 2,000–4,000 characters per A4, an ECF header about 60, a fax header about 80.
STAMP_CHARS_PER_A4 = 200
# "Most of the page": images over this share of its area (a scanner's page image is ~100%).
PAGE_COVERED = 0.5
# A line entirely within this share of the page from an edge is in the margin (stamps, Bates
# numbers, fax headers, side stamps); body text crosses into the page.
MARGIN = 0.12
A4_AREA = 595.0 * 842.0
MAX_GARBAGE = 0.2
_SPACE = re.compile(r"\s")
# Replacement characters, controls, surrogates and private-use glyphs (the BMP's and planes 15-16).
_GARBAGE = re.compile(
    "[\ufffd\x00-\x08\x0b\x0e-\x1f\x7f\ud800-\udfff\ue000-\uf8ff\U000f0000-\U0010ffff]"
)


@dataclass(frozen=True, slots=True)
class PageProbe:
    """What a page's text layer and objects say about how to read it."""

    chars: int
    garbage: int
    area: float
    images: int
    image_cover: float = 0.0  # share of the page under images (0–1)
    body_chars: int | None = None  # visible characters outside the margins (None: not known)

    @property
    def density(self) -> float:
        """Visible characters per A4-sized area."""
        return self.chars * A4_AREA / self.area if self.area > 0 else 0.0

    @property
    def garbage_ratio(self) -> float:
        return self.garbage / self.chars if self.chars else 0.0

    @property
    def garbled(self) -> bool:
        """The text layer is mostly unreadable glyphs: indexing it would index noise."""
        return self.chars > 0 and self.garbage_ratio > MAX_GARBAGE

    @property
    def stamped_scan(self) -> bool:
        """An image covers most of the page and the text layer is a stamp over it."""
        if self.images == 0 or self.image_cover < PAGE_COVERED:
            return False
        return self.density < STAMP_CHARS_PER_A4 or self.body_chars == 0

    @property
    def text_usable(self) -> bool:
        return self.density >= MIN_CHARS_PER_A4 and not self.garbled and not self.stamped_scan

    @property
    def needs_ocr(self) -> bool:
        return not self.text_usable and (self.images > 0 or self.garbled)


def probe(
    text: str,
    width: float,
    height: float,
    images: int,
    *,
    image_cover: float = 0.0,
    body_chars: int | None = None,
) -> PageProbe:
    garbage = len(_GARBAGE.findall(text))
    area = max(0.0, width * height)
    return PageProbe(visible_chars(text), garbage, area, images, min(1.0, image_cover), body_chars)


def visible_chars(text: str) -> int:
    return len(text) - len(_SPACE.findall(text))


def in_margin(box: BBox) -> bool:
    """The box lies entirely within MARGIN of one of the page's edges."""
    x0, y0, x1, y1 = box
    return y1 <= MARGIN or y0 >= 1 - MARGIN or x1 <= MARGIN or x0 >= 1 - MARGIN


def chars_outside_margins(lines: Iterable[tuple[str, BBox]]) -> int:
    """Visible characters of the lines that are not in the margins."""
    return sum(visible_chars(text) for text, box in lines if not in_margin(box))
