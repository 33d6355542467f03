"""Does a PDF page have a usable text layer, or must it be read from its pixels?

A page is read from its text layer when it has enough characters for its size and few of them
are garbage (U+FFFD, private-use glyphs, controls: what a font without a ToUnicode map or a
broken OCR layer gives). Otherwise, if the page shows an image, it is OCR'd; a page with
neither text nor images is blank and costs nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Characters per A4-sized area (595 × 842 pt) below which a page counts as having no text:
# a scan with a stamped page number or a one-word caption has a text layer, but not the page's.
MIN_CHARS_PER_A4 = 25
A4_AREA = 595.0 * 842.0
MAX_GARBAGE = 0.2
_SPACE = re.compile(r"\s")
# Replacement characters, controls, surrogates and private-use glyphs (the BMP's and planes 15-16).
_GARBAGE = re.compile(
    "[\ufffd\x00-\x08\x0b\x0e-\x1f\x7f\ud800-\udfff\ue000-\uf8ff\U000f0000-\U0010ffff]"
)


@dataclass(frozen=True, slots=True)
class PageProbe:
    chars: int
    garbage: int
    area: float
    images: int

    @property
    def density(self) -> float:
        """Visible characters per A4-sized area."""
        return self.chars * A4_AREA / self.area if self.area > 0 else 0.0

    @property
    def garbage_ratio(self) -> float:
        return self.garbage / self.chars if self.chars else 0.0

    @property
    def text_usable(self) -> bool:
        return self.density >= MIN_CHARS_PER_A4 and self.garbage_ratio <= MAX_GARBAGE

    @property
    def needs_ocr(self) -> bool:
        return not self.text_usable and self.images > 0


def probe(text: str, width: float, height: float, images: int) -> PageProbe:
    visible = len(text) - len(_SPACE.findall(text))
    garbage = len(_GARBAGE.findall(text))
    return PageProbe(visible, garbage, max(0.0, width * height), images)
