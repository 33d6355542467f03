"""Which header and footer blocks of an OCR'd document are running heads, and which are text.

The layout model marks the top and bottom lines of a page as ``header`` / ``footer`` whatever
they say: on a journal page that is the running head, but on a one-page scan it is as often the
document's own title or number. So a margin block is dropped only when it behaves like a running
head: its text (digits aside) recurs on another page, or it is just a page number ("12",
"Page 3", "- 4 -", "3 / 10", "iv"); page numbers are already the chunk's ``page``. Every other
margin block is kept as text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

MARGIN = "margin"
_PAGE_NUMBER = re.compile(
    r"^[-–—\s]*(?:(?:page|p\.|seite|第)\s*)?(?:\d{1,4}|[ivxlc]{1,6})"
    r"(?:\s*(?:/|of|von)\s*\d{1,4})?\s*(?:页)?[-–—\s]*$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")


class Block(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...


def running_key(text: str) -> str:
    """The text with its numbers blanked, so "Page 3 of J Med" and "Page 4 of J Med" match."""
    return " ".join(_DIGITS.sub("#", text).casefold().split())


def is_page_number(text: str) -> bool:
    return bool(_PAGE_NUMBER.match(text.strip()))


def running_margins(pages: Sequence[Sequence[Block]]) -> set[str]:
    """The keys of margin texts that recur on two or more pages."""
    seen: Counter[str] = Counter()
    for blocks in pages:
        seen.update({running_key(b.text) for b in blocks if b.kind == MARGIN})
    return {key for key, pages_with_it in seen.items() if pages_with_it > 1}


def is_running(block: Block, running: set[str]) -> bool:
    """A margin block to drop: a page number or a head repeated across pages."""
    return block.kind == MARGIN and (
        is_page_number(block.text) or running_key(block.text) in running
    )
