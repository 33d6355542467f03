"""Citation checks: every ``[n]`` in an answer must name a source that was sent.

Chat models also cite several sources in one bracket: ``[1-3]`` (or with an en or em dash),
``[1,7]``, ``[1, 2]``, ``[1、2]``, and full-width ``【9】``. Each number such a bracket names
counts as cited (and is checked), and the finished answer writes it as the documented form, one
``[n]`` each (``[1-3]`` → ``[1][2][3]``), so every client (the UI's links, MCP, the SDK) reads
one form. The ``token`` events carry the text as streamed: it is checked only when whole.
Code (a fenced block, an inline span) is left alone: ``"weights": [1, 2, 3]`` is no citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER = r"\d{1,4}"
_CITATION = re.compile(rf"[\[【]\s*({_NUMBER}(?:\s*[-–—,，、]\s*{_NUMBER})*)\s*[\]】]")
_RANGE = re.compile(rf"({_NUMBER})\s*[-–—]\s*({_NUMBER})")
_LIST = re.compile(r"\s*[,，、]\s*")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
# A bracket naming more numbers than this is not read as a list of citations: its numbers are
# taken as written ("[1-60]" cites 1 and 60, and 60 is out of range) and it is left as is.
MAX_NUMBERS_PER_BRACKET = 20
# No answer has a thousand sources: a bracket of several numbers holding one this big is a range
# of years or pages ("[2019-2021]"), left as written and citing nothing.
YEAR_LIKE = 1000


@dataclass(frozen=True, slots=True)
class CitationReport:
    cited: tuple[int, ...]  # distinct, in order of first appearance
    out_of_range: tuple[int, ...]

    @property
    def ok(self) -> bool:
        return not self.out_of_range


def check_citations(answer: str, source_count: int) -> CitationReport:
    """The numbers the answer cites, and those that name no source that was sent."""
    prose = _CODE.sub(" ", answer)
    numbers = (n for inside in _CITATION.findall(prose) for n in cited_numbers(inside))
    cited = tuple(dict.fromkeys(numbers))
    return CitationReport(cited, tuple(n for n in cited if not 1 <= n <= source_count))


def one_per_bracket(answer: str) -> str:
    """The answer with each bracket of several citations written as one ``[n]`` per number
    (``[1-3]`` → ``[1][2][3]``, ``【9】`` → ``[9]``); a bracket not read as a list, and code,
    stay as written."""

    def rewrite(match: re.Match[str]) -> str:
        numbers = _listed(match[1])
        return match[0] if numbers is None else "".join(f"[{n}]" for n in numbers)

    pieces, start = [], 0
    for code in _CODE.finditer(answer):
        pieces += [_CITATION.sub(rewrite, answer[start : code.start()]), code[0]]
        start = code.end()
    return "".join([*pieces, _CITATION.sub(rewrite, answer[start:])])


def cited_numbers(inside: str) -> list[int]:
    """The numbers one bracket names: ``1-3`` → 1, 2, 3; ``1,7`` → 1, 7; a descending range or
    more than MAX_NUMBERS_PER_BRACKET numbers → the numbers as written; a bracket of several
    numbers one of which has four digits (``[2019-2021]``, years) → none: it cites nothing."""
    if _years_or_pages(inside) or _malformed(inside):
        return []
    listed = _listed(inside)
    return [int(n) for n in re.findall(_NUMBER, inside)] if listed is None else listed


def _years_or_pages(inside: str) -> bool:
    written = [int(n) for n in re.findall(_NUMBER, inside)]
    return len(written) > 1 and max(written) >= YEAR_LIKE


def _malformed(inside: str) -> bool:
    """A part that is neither a number nor a range (``[1-2-3]``, a date ``[03-04-21]``)."""
    return any(
        not part.isdigit() and _RANGE.fullmatch(part) is None for part in _LIST.split(inside)
    )


def _listed(inside: str) -> list[int] | None:
    """The bracket's numbers with its ranges expanded; None when it is no list of citations."""
    if _years_or_pages(inside) or _malformed(inside):
        return None
    numbers: list[int] = []
    for part in _LIST.split(inside):
        bounds = _RANGE.fullmatch(part)
        if bounds is None:
            numbers.append(int(part))
            continue
        low, high = int(bounds[1]), int(bounds[2])
        if high < low or len(numbers) + high - low >= MAX_NUMBERS_PER_BRACKET:
            return None
        numbers.extend(range(low, high + 1))
    return numbers if len(numbers) <= MAX_NUMBERS_PER_BRACKET else None
