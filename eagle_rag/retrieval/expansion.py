"""Parent-document expansion: a section-summary hit drills down to its best chunks.

Summaries are what match broad questions ("what does chapter 2 cover?"), but the evidence an
agent cites is the section's own text. A summary hit in the final list is replaced, at its rank,
by the best chunks inside its section: first those already among the candidates (they are
ranked for this query already), then a search restricted to the document with the plan's query
vector (or BM25 when the plan had none), keeping chunks whose path lies within the section;
when neither finds one (a BM25 query that matched only the heading), the section's first chunks
in reading order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from eagle_rag.index.filters import Filter, all_of, eq, ne
from eagle_rag.index.vector_store import VectorHit
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.hits import to_hit

SUMMARY = "section_summary"
DRILL_DEPTH = 50
READ_LIMIT = 16384  # Milvus's largest query window


def is_summary(hit: RetrievedHit) -> bool:
    return hit.metadata.get("type") == SUMMARY


def within(path: str, section: str) -> bool:
    return path == section or path.startswith(section + "/")


class ParentExpander:
    """Replaces summary hits with their best child chunks, searching the store when needed."""

    def __init__(self, vectors: Any, *, children: int) -> None:
        self._vectors = vectors
        self._children = children

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
        """``queries`` and ``vectors`` are each plan's BM25 text and query vector."""
        """The expanded list (at most ``limit``) and how many summaries were drilled into."""
        output: list[RetrievedHit] = []
        taken: set[tuple[str, ...]] = set()
        expanded = 0
        # Evidence already ranked on its own must not be duplicated by a drill-down.
        direct = {h.dedupe_key for h in hits if not is_summary(h)}
        for hit in hits:
            if len(output) >= limit:
                break
            if not is_summary(hit):
                if hit.dedupe_key not in taken:
                    output.append(hit)
                    taken.add(hit.dedupe_key)
                continue
            children, covered = await self._children_of(
                hit, pool, queries, vectors, scope, direct | taken
            )
            if not children:
                if not covered:  # nothing below it at all: the summary is the evidence
                    output.append(hit)
                    taken.add(hit.dedupe_key)
                continue  # its chunks are in the list already: it adds nothing
            expanded += 1
            for child in children[: limit - len(output)]:
                output.append(
                    replace(
                        child,
                        score=hit.score,
                        scores={**child.scores, "parent": hit.score},
                        metadata={**child.metadata, "expanded_from": hit.chunk_id},
                    )
                )
                taken.add(child.dedupe_key)
        return output, expanded

    async def _children_of(
        self,
        summary: RetrievedHit,
        pool: Sequence[RetrievedHit],
        queries: dict[str, str],
        vectors: dict[str, list[float] | None],
        scope: Filter,
        exclude: set[tuple[str, ...]],
    ) -> tuple[list[RetrievedHit], bool]:
        """Up to ``children`` new chunks, and whether the section has chunks listed already."""
        found: list[RetrievedHit] = []
        seen = set(exclude)
        covered = False

        def consider(candidate: RetrievedHit) -> None:
            nonlocal covered
            if (
                candidate.document_id != summary.document_id
                or is_summary(candidate)
                or not within(candidate.path, summary.path)
            ):
                return
            if candidate.dedupe_key in exclude:
                covered = True
            elif len(found) < self._children and candidate.dedupe_key not in seen:
                found.append(candidate)
                seen.add(candidate.dedupe_key)

        for candidate in pool:
            consider(candidate)
        if len(found) < self._children:
            query = queries.get(summary.collection, "")
            for candidate in await self._search(summary, query, vectors, scope):
                consider(candidate)
        if not found and not covered:
            for candidate in await self._in_reading_order(summary, scope):
                consider(candidate)
        return found, covered

    async def _search(
        self,
        summary: RetrievedHit,
        query: str,
        vectors: dict[str, list[float] | None],
        scope: Filter,
    ) -> list[RetrievedHit]:
        collection = summary.collection
        where = all_of(scope, eq("document_id", summary.document_id), ne("type", SUMMARY))
        vector = vectors.get(collection)
        if vector is not None:
            rows = await asyncio.to_thread(
                self._vectors.search_dense, collection, [vector], top_k=DRILL_DEPTH, where=where
            )
            stage = "dense"
        else:
            rows = await asyncio.to_thread(
                self._vectors.search_sparse, collection, [query], top_k=DRILL_DEPTH, where=where
            )
            stage = "sparse"
        return [to_hit(collection, row, stage=stage) for row in rows[0]]

    async def _in_reading_order(self, summary: RetrievedHit, scope: Filter) -> list[RetrievedHit]:
        where = all_of(scope, eq("document_id", summary.document_id), ne("type", SUMMARY))
        rows = await asyncio.to_thread(
            self._vectors.query, summary.collection, where, limit=READ_LIMIT
        )
        inside = [row for row in rows if within(str(row.get("path", "")), summary.path)]
        inside.sort(key=lambda row: (row.get("metadata") or {}).get("start_offset") or 0)
        return [
            to_hit(summary.collection, VectorHit(str(row["id"]), 0.0, row), stage="order")
            for row in inside
        ]
