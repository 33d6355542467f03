"""Which header and footer blocks of an OCR'd document are running heads, and which are text.

The layout model marks the top and bottom lines of a page as ``header`` / ``footer`` whatever
they say: on a journal page that is the running head, but on a one-page scan it is as often the
document's own title or number. So a margin block is dropped only when it behaves like a running
head: its text recurs on another page (its numbers may differ only where they follow the page
number), or it is just a page number ("12", "Page 3", "- 4 -", "3 / 10", "iv"); page numbers
are already the chunk's ``page``. Every other margin block is kept as text.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

MARGIN = "margin"
_PAGE_NUMBER = re.compile(
    r"^[-–—\s]*(?:(?:page|p\.|seite|第)\s*)?(?:\d{1,4}|[ivxlc]{1,6})"
    r"(?:\s*(?:/|of|von)\s*\d{1,4})?\s*(?:页)?[-–—\s]*$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
# How many texts of the same shape, on each side in page order, a margin text is compared with.
_NEIGHBOURS = 3


def running_key(text: str) -> str:
    """The text with its numbers blanked, so "Page 3 of J Med" and "Page 4 of J Med" match."""
    return " ".join(_DIGITS.sub("#", text).casefold().split())


def is_page_number(text: str) -> bool:
    return bool(_PAGE_NUMBER.match(text.strip()))


def running_margins(pages: Sequence[tuple[int, Sequence[str]]]) -> set[tuple[int, str]]:
    """``(page, text)`` of every margin text that runs: the same text in the margin of another
    page, or the same but for numbers that move with the page ("Page 3 of 80" on page 3, "Page
    4 of 80" on page 4). Texts are compared as ``margin_text`` gives them.

    Numbers that do not follow the page make no running head: "1.3.2 Water use" at the foot of
    page 6 and "2.3.2 Water use" at the foot of page 20 are the headings of two sections, and
    dropping them put a section's text under the one before it."""
    exact: Counter[str] = Counter()
    by_key: defaultdict[str, list[tuple[int, str]]] = defaultdict(list)
    for page, texts in pages:
        for text in {margin_text(t) for t in texts}:
            exact[text] += 1
            by_key[running_key(text)].append((page, text))
    running: set[tuple[int, str]] = set()
    for occurrences in by_key.values():
        occurrences.sort()
        for at, (page, text) in enumerate(occurrences):
            near = occurrences[max(0, at - _NEIGHBOURS) : at + _NEIGHBOURS + 1]
            if exact[text] > 1 or any(_follows_page(text, page, o, q) for q, o in near):
                running.add((page, text))
    return running


def _follows_page(text: str, page: int, other: str, other_page: int) -> bool:
    """Two margin texts of one running head: every number that differs moves with the page."""
    ours, theirs = _DIGITS.findall(text), _DIGITS.findall(other)
    moved = [(int(a), int(b)) for a, b in zip(ours, theirs, strict=True) if a != b]
    return page != other_page and bool(moved) and all(a - b == page - other_page for a, b in moved)


def margin_text(text: str) -> str:
    """A margin text as ``running_margins`` compares it: case and spaces aside (OCR reads
    "Northern Valley Bulletin" on one page and "NorthernValley Bulletin" on the next)."""
    return "".join(text.casefold().split())


def is_running(page: int, text: str, running: set[tuple[int, str]]) -> bool:
    """A margin text to drop: a page number or a running head."""
    return is_page_number(text) or (page, margin_text(text)) in running
