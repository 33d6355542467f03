"""Parent-document expansion: a section-summary hit drills down to its best chunks.

Summaries are what match broad questions ("what does chapter 2 cover?"), but the evidence an
agent cites is the section's own text. A summary hit in the final list is replaced, at its rank,
by the best chunks inside its section: first those already among the candidates (they are
ranked for this query already: one ranked below the summary moves up to its rank), then the
best of one search restricted to the summaries' documents with the plan's query vector (or BM25
when the plan had none), keeping chunks whose path lies within the section; when neither finds
one (a BM25 query that matched only the heading), the section's first chunks in reading order.
A summary whose chunks are all listed above it already adds nothing and is dropped. Look-ups
are batched: one search (and at most one query) per collection for all summaries of a result
list, not one per summary; and only summaries among the first ``search_depth`` output positions
trigger them (the passages an agent reads first): deeper summaries drill down from the
candidates alone, or stay as they are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from eagle_rag.index.filters import Filter, all_of, in_, ne
from eagle_rag.index.vector_store import MAX_TOP_K, VectorHit
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.hits import to_hit
from eagle_rag.retrieval.relevance import RELEVANCE, relevance

SUMMARY = "section_summary"
# Rows fetched per summary when drilling down: Lite returns rows at ~0.1 ms each, so the search
# asks for a few per summary rather than a deep list; reading order covers what it misses.
PER_SUMMARY_DEPTH = 5
MIN_DEPTH = 10
READ_LIMIT = 16384  # Milvus's largest query window

Key = tuple[str, ...]


def is_summary(hit: RetrievedHit) -> bool:
    return hit.metadata.get("type") == SUMMARY


def within(path: str, section: str) -> bool:
    return path == section or path.startswith(section + "/")


@dataclass(slots=True)
class _Drill:
    """What one summary drills down to, gathered from the pool and the look-ups."""

    summary: RetrievedHit
    exclude: set[Key]
    limit: int
    found: list[RetrievedHit] = field(default_factory=list)
    covered: bool = False  # some of its chunks are listed above it already

    def consider(self, candidate: RetrievedHit) -> None:
        if (
            candidate.document_id != self.summary.document_id
            or is_summary(candidate)
            or not within(candidate.path, self.summary.path)
        ):
            return
        key = candidate.dedupe_key
        if key in self.exclude:
            self.covered = True
        elif len(self.found) < self.limit and key not in {h.dedupe_key for h in self.found}:
            self.found.append(candidate)

    @property
    def wanting(self) -> bool:
        return len(self.found) < self.limit


class ParentExpander:
    """Replaces summary hits with their best child chunks, searching the store when needed."""

    def __init__(self, vectors: Any, *, children: int, search_depth: int) -> None:
        self._vectors = vectors
        self._children = children
        self._search_depth = search_depth

    async def expand(
        self,
        hits: Sequence[RetrievedHit],
        pool: Sequence[RetrievedHit],
        *,
        limit: int,
        queries: dict[str, str],
        vectors: dict[str, list[float] | None],
        scope: Filter,
    ) -> tuple[list[RetrievedHit], int]:
        """The expanded list (at most ``limit``) and how many summaries were drilled into.

        ``queries`` and ``vectors`` are each plan's BM25 text and query vector.
        """
        # Evidence ranked above a summary is shown already; what it drills down to comes first
        # from the ranked list itself (moving up to its rank), then from the other candidates.
        pool = (*hits, *pool)
        weakest = _weakest_relevance(pool)
        above = _above(hits)
        drills: dict[str, _Drill] = {}
        output: list[RetrievedHit] = []
        taken: set[Key] = set()
        expanded = 0
        start = 0
        while start < len(hits) and len(output) < limit:
            # Resolve the summaries that can still reach the output, all at once.
            window = hits[start : start + limit - len(output)]
            pending = [
                (start + i, h)
                for i, h in enumerate(window)
                if is_summary(h) and h.chunk_id not in drills
            ]
            for searchable in (True, False):
                group = [h for i, h in pending if (i < self._search_depth) == searchable]
                await self._resolve(
                    group, drills, pool, above, queries, vectors, scope, search=searchable
                )
            for hit in window:
                if len(output) >= limit:
                    break
                if not is_summary(hit):
                    if hit.dedupe_key not in taken:
                        output.append(hit)
                        taken.add(hit.dedupe_key)
                    continue
                drill = drills[hit.chunk_id]
                children = [c for c in drill.found if c.dedupe_key not in taken]
                if not children:
                    # Nothing below it at all: it is the evidence (its chunks listed or drilled
                    # into already add nothing).
                    if not drill.found and not drill.covered:
                        output.append(hit)
                        taken.add(hit.dedupe_key)
                    continue
                expanded += 1
                for n, child in enumerate(children[: limit - len(output)]):
                    output.append(_as_child(child, hit, first=n == 0, weakest=weakest))
                    taken.add(child.dedupe_key)
            start += len(window)
        return output, expanded

    async def _resolve(
        self,
        summaries: Sequence[RetrievedHit],
        drills: dict[str, _Drill],
        pool: Sequence[RetrievedHit],
        above: dict[str, set[Key]],
        queries: dict[str, str],
        vectors: dict[str, list[float] | None],
        scope: Filter,
        *,
        search: bool,
    ) -> None:
        if not summaries:
            return
        fresh = [_Drill(s, above[s.chunk_id], self._children) for s in summaries]
        for drill in fresh:
            drills[drill.summary.chunk_id] = drill
            for candidate in pool:
                drill.consider(candidate)
        if not search:
            return
        by_collection: dict[str, list[_Drill]] = {}
        for drill in fresh:
            if drill.wanting:
                by_collection.setdefault(drill.summary.collection, []).append(drill)
        for collection, group in by_collection.items():
            found = await self._search(
                collection, group, queries.get(collection, ""), vectors.get(collection), scope
            )
            for drill in group:
                for candidate in found:
                    drill.consider(candidate)
            unread = [d for d in group if not d.found and not d.covered]
            if unread:
                for candidate in await self._in_reading_order(collection, unread, scope):
                    for drill in unread:
                        drill.consider(candidate)

    async def _search(
        self,
        collection: str,
        drills: Sequence[_Drill],
        query: str,
        vector: list[float] | None,
        scope: Filter,
    ) -> list[RetrievedHit]:
        where = _children_filter(scope, drills)
        depth = min(MAX_TOP_K, max(MIN_DEPTH, PER_SUMMARY_DEPTH * self._children * len(drills)))
        if vector is not None:
            rows = await asyncio.to_thread(
                self._vectors.search_dense, collection, [vector], top_k=depth, where=where
            )
            stage = "dense"
        elif query.strip():
            rows = await asyncio.to_thread(
                self._vectors.search_sparse, collection, [query], top_k=depth, where=where
            )
            stage = "sparse"
        else:
            return []
        return [to_hit(collection, row, stage=stage) for row in rows[0]]

    async def _in_reading_order(
        self, collection: str, drills: Sequence[_Drill], scope: Filter
    ) -> list[RetrievedHit]:
        where = _children_filter(scope, drills)
        rows = await asyncio.to_thread(self._vectors.query, collection, where, limit=READ_LIMIT)
        rows.sort(key=lambda row: (row.get("metadata") or {}).get("start_offset") or 0)
        return [
            to_hit(collection, VectorHit(str(row["id"]), 0.0, row), stage="order") for row in rows
        ]


def _above(hits: Sequence[RetrievedHit]) -> dict[str, set[Key]]:
    """For each summary of the list, the evidence ranked above it (already shown there)."""
    listed: set[Key] = set()
    above: dict[str, set[Key]] = {}
    for hit in hits:
        if is_summary(hit):
            above[hit.chunk_id] = set(listed)
        else:
            listed.add(hit.dedupe_key)
    return above


def _children_filter(scope: Filter, drills: Sequence[_Drill]) -> Filter:
    documents = sorted({d.summary.document_id for d in drills})
    return all_of(scope, in_("document_id", documents), ne("type", SUMMARY))


def _as_child(
    child: RetrievedHit, summary: RetrievedHit, *, first: bool, weakest: float
) -> RetrievedHit:
    """A drilled-down chunk at the summary's rank, saying where it came from.

    Its relevance: the first child stands in for the summary, so it shows the summary's (or its
    own, when higher). A sibling beside it shows its own: the one it was ranked with, or, when
    only the drill-down found it (it ranked below every candidate), the weakest candidate's, at
    most the summary's. Giving every sibling the summary's put a section's unrelated chunks
    ("Firmware updates" for "reset router") level with the best hit, past any score threshold.
    """
    own = relevance(child.scores) if _scored(child) else None
    summary_relevance = relevance(summary.scores)
    if not _scored(summary):  # a plan fused by RRF: no relevance to pass on
        shown = {}
    elif first:
        shown = _relevance_of(summary) if own is None or own < summary_relevance else {}
    else:
        shown = {} if own is not None else {RELEVANCE: min(weakest, summary_relevance)}
    return replace(
        child,
        score=summary.score,
        scores={**child.scores, **shown, "parent": summary.score},
        metadata={**child.metadata, "expanded_from": summary.chunk_id},
    )


def _scored(hit: RetrievedHit) -> bool:
    return RELEVANCE in hit.scores or "rerank" in hit.scores


def _weakest_relevance(pool: Sequence[RetrievedHit]) -> float:
    scored = [relevance(h.scores) for h in pool if _scored(h)]
    return min(scored, default=0.0)


def _relevance_of(hit: RetrievedHit) -> dict[str, float]:
    return {k: hit.scores[k] for k in (RELEVANCE, "rerank") if k in hit.scores}
