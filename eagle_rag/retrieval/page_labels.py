"""Figures and tables a question names by their number ("Figure 1", "Table 3", "图 2").

A reader who asks about "Figure 1" wants the page where Figure 1 is printed, and its caption
("Figure 1: ...") says where that is — the words around it rarely match the question as well as
the mentions elsewhere ("as Figure 1 shows") do. A caption is the label followed by a colon or
a full stop (a mention is not); the page holding it gets one vote (``LABEL_VOTE``) per label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from eagle_rag.retrieval.pack import Passage

LABEL_VOTE = 1.0  # as much as the best text passage's vote
_NAMED = re.compile(r"\b(fig(?:ure)?s?\.?|tables?)\s*(\d{1,3})\b|([图表])\s*(\d{1,3})", re.I)
_KINDS = {"f": "figure", "t": "table", "图": "figure", "表": "table"}
_CAPTION = {
    "figure": r"(?:\bfig(?:ure)?\.?|图)\s*{n}\s*[:.：]",
    "table": r"(?:\btable|表)\s*{n}\s*[:.：]",
}


def named_labels(query: str) -> frozenset[tuple[str, str]]:
    """``{("figure", "1"), ("table", "3")}`` for the figures and tables the question names."""
    labels = set()
    for match in _NAMED.finditer(query):
        word, number = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
        labels.add((_KINDS[word[0].lower()], number))
    return frozenset(labels)


def captioned_pages(passages: Iterable[Passage], labels: frozenset[tuple[str, str]]) -> set[int]:
    """Pages on which one of the passages prints the caption of a named figure or table."""
    if not labels:
        return set()
    patterns = [
        re.compile(_CAPTION[kind].format(n=number) + r"(?!\d)", re.I) for kind, number in labels
    ]
    # Chunks of paged sources stop at page breaks: a caption's passage is on its first page.
    return {
        passage.page_nums[0]
        for passage in passages
        if passage.page_nums and any(p.search(passage.text) for p in patterns)
    }
