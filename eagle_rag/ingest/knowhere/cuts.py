"""Cutting text too long for one chunk: the stored-size check, the search for the longest piece
that fits, and the cut of an over-long sentence at words or characters."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from eagle_rag.index.collections import MAX_TEXT

TokenCounter = Callable[[str], int]

# A chunk's text is stored in a VARCHAR of MAX_TEXT UTF-8 bytes. Few tokens can still be longer
# than that: whitespace (indentation, layout runs of spaces) costs a tokenizer nothing.
MAX_CHUNK_BYTES = MAX_TEXT


@dataclass(frozen=True, slots=True)
class Unit:
    """A sentence, line or piece of one, with its offsets in the tree text and its tokens."""

    text: str
    start: int
    end: int
    tokens: int
    page: int | None


def hard_split(
    text: str, start: int, budget: int, count: TokenCounter, page: int | None
) -> Iterator[Unit]:
    """A single sentence over budget: cut at word boundaries, or between characters in a run
    without spaces (CJK, a minified blob) and in a word too long for a chunk by itself.

    Each cut is searched for (:func:`last_fitting`), so a long run costs a few token counts
    per piece; counting every prefix character by character took 25 minutes for 3 MB.
    """
    spaced = " " in text.strip()
    ends = [m.end() for m in _WORD.finditer(text)] if spaced else range(1, len(text) + 1)
    position, width = 0, budget
    while position < len(text):

        def fits(end: int, begin: int = position) -> bool:
            piece = text[begin:end]
            return fits_stored(piece) and count(piece) <= budget

        first = bisect.bisect_right(ends, position)
        last = last_fitting(first, len(ends) - 1, lambda k: fits(ends[k]), first + width - 1)
        end = ends[last]
        if last == first and spaced and end - position > 1 and not fits(end):
            # One word too long for a chunk: cut it between characters.
            end = last_fitting(position + 1, end, fits, position + budget)
        end = _character_boundary(text, position, end)
        piece = text[position:end].rstrip()
        if piece.strip():
            at = start + position
            yield Unit(piece, at, at + len(piece), count(piece), page)
        width, position = max(1, last - first + 1), end


_WORD = re.compile(r"\S+\s*")


def _character_boundary(text: str, position: int, end: int) -> int:
    """``end``, moved back before any combining marks, variation selectors or joiners that go
    with the character before it (never to ``position``)."""
    while end < len(text) and end - 1 > position and _joins(text[end], text[end - 1]):
        end -= 1
    return end


def _joins(char: str, previous: str) -> bool:
    return (
        unicodedata.combining(char) != 0
        or "\ufe00" <= char <= "\ufe0f"
        or "\u200d" in (char, previous)
    )


def fits_stored(text: str) -> bool:
    """Whether ``text`` fits the stored text field (no character is over 4 UTF-8 bytes, so
    most text is judged by its length alone)."""
    return len(text) * 4 <= MAX_CHUNK_BYTES or len(text.encode("utf-8")) <= MAX_CHUNK_BYTES


def last_fitting(low: int, high: int, fits: Callable[[int], bool], guess: int) -> int:
    """The largest ``k`` in ``low..high`` with ``fits(k)``, or ``low`` when none does (the
    caller's floor). Gallops from ``guess`` and then bisects: when consecutive pieces are alike
    (a guess from the last one) it takes a few calls, not one per candidate; with ``fits``
    monotone it finds what trying every candidate in turn would."""
    probe, step = min(max(guess, low), high), 1
    if probe == low or fits(probe):
        low = probe
        while low < high:
            probe = min(low + step, high)
            if not fits(probe):
                high = probe - 1
                break
            low, step = probe, step * 2
    else:
        high = probe - 1
        while high > low:
            probe = max(high + 1 - step, low)
            if probe == low or fits(probe):
                low = probe
                break
            high, step = probe - 1, step * 2
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
