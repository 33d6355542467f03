"""Put a PDF line holding Arabic or Hebrew into reading (logical) order, from its glyphs' places.

PDFium's order for such a line depends on how the producer wrote it: glyphs left to right
(visual order), in reading order, one object per glyph (then PDFium flips a run of Latin words),
or a whole line laid out left to right by a generator without bidi support (PDFium then
reverses every word). Only the glyphs' x positions say the same thing in all of these, so the
line is rebuilt from them: sorted left to right, then read right to left when its strong
characters are mostly right-to-left, with left-to-right runs inside it (Latin words, numbers
like 3.5) kept in their own order; in a mostly left-to-right line only its right-to-left runs
are turned. A line laid out left to right in reading order shows mirrored words: Arabic's
article "ال" at their ends, letters that only end a word (ة, ى, Hebrew final forms) at their
starts; such a line is read left to right as laid out.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

_RIGHT_TO_LEFT = frozenset({"R", "AL"})
_LEFT_TO_RIGHT = frozenset({"L", "EN", "AN"})  # letters and digits, which read left to right
_WORD_FINAL = frozenset("ةىךםןףץ")
_ARTICLE = "ال"


def has_right_to_left(text: str) -> bool:
    """Whether ``text`` holds a right-to-left letter (Arabic, Hebrew...)."""
    return any(unicodedata.bidirectional(ch) in _RIGHT_TO_LEFT for ch in text)


def reading_order(text: str, centres: Sequence[float]) -> str:
    """``text``'s characters in reading order, given each one's horizontal centre."""
    visual = [text[i] for i in sorted(range(len(text)), key=lambda i: centres[i])]
    rtl = sum(1 for ch in visual if unicodedata.bidirectional(ch) in _RIGHT_TO_LEFT)
    ltr = sum(1 for ch in visual if unicodedata.bidirectional(ch) == "L")
    read = _right_to_left(visual) if rtl > ltr else _turn_right_to_left_runs(visual)
    laid_out = "".join(visual)
    return laid_out if _word_shape_score(laid_out) > _word_shape_score(read) else read


def _right_to_left(visual: list[str]) -> str:
    """A right-to-left line read from its right end, left-to-right runs kept as they are."""
    return "".join(reversed(_runs(visual)))


def _runs(visual: list[str]) -> list[str]:
    """The line cut into left-to-right runs (from a letter or digit to the last one before a
    right-to-left letter, with the spaces and marks between) and single other characters."""
    runs: list[str] = []
    index = 0
    while index < len(visual):
        end = index + 1
        if unicodedata.bidirectional(visual[index]) in _LEFT_TO_RIGHT:
            scan = end
            while scan < len(visual) and (
                unicodedata.bidirectional(visual[scan]) not in _RIGHT_TO_LEFT
            ):
                scan += 1
                if unicodedata.bidirectional(visual[scan - 1]) in _LEFT_TO_RIGHT:
                    end = scan
        runs.append("".join(visual[index:end]))
        index = end
    return runs


def _turn_right_to_left_runs(visual: list[str]) -> str:
    """A left-to-right line: each run from a right-to-left letter to the last one before a
    Latin letter (digits and punctuation between included) read right to left."""
    pieces: list[str] = []
    index = 0
    while index < len(visual):
        if unicodedata.bidirectional(visual[index]) not in _RIGHT_TO_LEFT:
            pieces.append(visual[index])
            index += 1
            continue
        end = scan = index + 1
        while scan < len(visual) and unicodedata.bidirectional(visual[scan]) != "L":
            scan += 1
            if unicodedata.bidirectional(visual[scan - 1]) in _RIGHT_TO_LEFT:
                end = scan
        pieces.append(_right_to_left(visual[index:end]))
        index = end
    return "".join(pieces)


def _word_shape_score(text: str) -> int:
    """How many words start with Arabic's article or end with a word-final letter."""
    score = 0
    for word in text.split():
        word = "".join(ch for ch in word if unicodedata.category(ch).startswith("L"))
        score += word.startswith(_ARTICLE) + (word[-1:] in _WORD_FINAL)
    return score
