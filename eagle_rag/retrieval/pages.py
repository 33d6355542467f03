"""The best pages of one document for a query: ranked passages → ranked pages.

Each passage votes for the pages its text is on (its ``page_nums``, page-true since chunks
and section summaries name where their words are printed) with the reciprocal of its rank,
shared among its pages by how much of it each holds, and weighed by how near its relevance is
to the best passage's: the best passage's main page leads unless several lower passages, nearly
as relevant, agree on another page. A page
keeps the passages that voted for it and their boxes on that page, so a viewer can open the
page and highlight the evidence.

Visual hits (figures, tables, page tiles of ``eagle_visual``, found by their caption and the
text in and around them) vote too, from their own ranked list: a chart's question often shares
few words with the paragraphs around it but many with the chart's caption, title and labels,
and the figure sits on exactly one page. Their vote counts ``VISUAL_WEIGHT`` of a text passage's
at the same rank, and the full weight when the question names a figure, chart, table or the
like ("in Figure 1", "the table on page 28"), since its answer is then in a picture. A figure
or table the question names by number sends one more vote to the page printing its caption
(``page_labels``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eagle_rag.plugins.payloads import QueryRequest, RetrievalMode
from eagle_rag.retrieval.pack import ContextPack, Passage
from eagle_rag.retrieval.page_labels import LABEL_VOTE, captioned_pages, named_labels
from eagle_rag.retrieval.visual import is_visual_collection
from eagle_rag.retrieval.wire import boxes, shown_relevance

# Passages searched to rank a document's pages: enough that pages with corroborating passages
# outrank a page named by one stray hit.
PAGE_SEARCH_DEPTH = 30
# A visual hit's vote against a text passage's at the same rank (both lists are ranked apart).
VISUAL_WEIGHT = 0.5
NAMED_VISUAL_WEIGHT = 1.0
NAMES_A_VISUAL = re.compile(
    r"\b(fig(ure)?s?|charts?|graphs?|plots?|diagrams?|tables?|pictures?|images?|photos?|"
    r"illustrations?|maps?|icons?|screenshots?|bars?|pie|slides?)\b|图|表",
    re.IGNORECASE,
)


@dataclass(slots=True)
class PageEvidence:
    """One page, its score and the passages (with their boxes on this page) that named it."""

    page: int
    score: float = 0.0
    passages: list[Passage] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "score": round(self.score, 6),
            "evidence": [
                {
                    "citation": p.citation,
                    "chunk_id": p.chunk_id,
                    "type": p.type,
                    "path": p.path,
                    "text": p.text,
                    "boxes": boxes_on(p, self.page),
                }
                for p in self.passages
            ],
        }


def boxes_on(passage: Passage, page: int) -> list[dict[str, Any]]:
    """The passage's boxes on one page (its row holds them for every page it spans)."""
    return [b for b in boxes(passage.metadata) if b.get("page") == page]


def page_shares(passage: Passage) -> dict[int, float]:
    """How much of the passage is on each of its pages: its boxes' area there (a paragraph
    that ends with two lines on the next page is mostly on the first), else equal parts."""
    numbers = list(dict.fromkeys(passage.page_nums))
    area = dict.fromkeys(numbers, 0.0)
    for box in boxes(passage.metadata):
        page, bbox = box.get("page"), box.get("bbox")
        if page in area and isinstance(bbox, (list, tuple)) and len(bbox) == 4:
            area[page] += max(0.0, bbox[2] - bbox[0]) * max(0.0, bbox[3] - bbox[1])
    total = sum(area.values())
    if total <= 0:
        return {n: 1.0 / len(numbers) for n in numbers}
    return {n: a / total for n, a in area.items()}


def rank_pages(
    passages: Sequence[Passage],
    *,
    limit: int,
    visuals: Sequence[Passage] = (),
    visual_weight: float = VISUAL_WEIGHT,
    labels: frozenset[tuple[str, str]] = frozenset(),
) -> list[PageEvidence]:
    """Pages by the rank-weighted shares of the text passages on them plus ``visual_weight``
    times those of the visual hits (each list ranked on its own), plus a vote for each page
    printing the caption of a figure or table in ``labels``; best first (ties: earlier
    page)."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if visual_weight < 0:
        raise ValueError("visual_weight must not be negative")
    pages: dict[int, PageEvidence] = {}
    # Visual hits keep their plain rank votes: a figure's relevance (its caption and the text
    # around it against the question) is on another scale than a passage's.
    lists = ((1.0, passages, _nearness(passages)), (visual_weight, visuals, [1.0] * len(visuals)))
    for weight, ranked, nearness in lists:
        for rank, (passage, near) in enumerate(zip(ranked, nearness, strict=True), start=1):
            for number, share in page_shares(passage).items():
                entry = pages.setdefault(number, PageEvidence(number))
                entry.score += weight * near * share / rank
                entry.passages.append(passage)
    for number in captioned_pages([*passages, *visuals], labels):
        pages[number].score += LABEL_VOTE
    ordered = sorted(pages.values(), key=lambda e: (-e.score, e.page))
    return ordered[:limit]


def _nearness(ranked: Sequence[Passage]) -> list[float]:
    """How near each passage's relevance is to the best one's, squared: a passage that merely
    filled the search's depth (a short document has few, all of them "found") barely votes,
    so a page of many such passages no longer outranks the one page with the answer, while
    passages that really corroborate (near the best) keep nearly their full vote."""
    shown = shown_relevance(ranked)
    best = shown[0] if shown else 0.0
    if best <= 0.0:
        return [1.0] * len(shown)
    return [(score / best) ** 2 for score in shown]


def visual_weight_for(query: str) -> float:
    """How much the visual hits count for this question (more when it names a picture)."""
    return NAMED_VISUAL_WEIGHT if NAMES_A_VISUAL.search(query) else VISUAL_WEIGHT


class PageSearcher(Protocol):
    async def search(
        self, request: QueryRequest, *, allowed_kbs: Iterable[str] | None = None
    ) -> ContextPack: ...


async def best_pages(
    retrieval: PageSearcher,
    *,
    query: str,
    document_id: str,
    kb_name: str,
    pages: int,
    depth: int = PAGE_SEARCH_DEPTH,
    mode: RetrievalMode = "hybrid",
    allowed_kbs: Iterable[str] | None = None,
) -> tuple[list[PageEvidence], ContextPack]:
    """Search one document (``depth`` passages, no parent expansion: a parent's text would
    name its whole section's pages) and rank its pages by its text passages and (hybrid
    search) its visual hits."""
    request = QueryRequest(
        query,
        kb_names=(kb_name,),
        document_ids=(document_id,),
        top_k=depth,
        mode=mode,
        expand_parents=False,
    )
    pack = await retrieval.search(request, allowed_kbs=allowed_kbs)
    text = [p for p in pack.passages if not is_visual_collection(p.collection)]
    visuals = [p for p in pack.passages if is_visual_collection(p.collection)]
    ranked = rank_pages(
        text,
        limit=pages,
        visuals=visuals,
        visual_weight=visual_weight_for(query),
        labels=named_labels(query),
    )
    return ranked, pack
