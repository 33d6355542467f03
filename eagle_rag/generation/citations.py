"""Citation checks: every ``[n]`` in an answer must name a source that was sent."""

from __future__ import annotations

import re
from dataclasses import dataclass

_CITATION = re.compile(r"\[(\d{1,4})\]")


@dataclass(frozen=True, slots=True)
class CitationReport:
    cited: tuple[int, ...]  # distinct, in order of first appearance
    out_of_range: tuple[int, ...]

    @property
    def ok(self) -> bool:
        return not self.out_of_range


def check_citations(answer: str, source_count: int) -> CitationReport:
    cited = tuple(dict.fromkeys(int(m) for m in _CITATION.findall(answer)))
    return CitationReport(cited, tuple(n for n in cited if not 1 <= n <= source_count))
