"""Reciprocal Rank Fusion with dedupe: the only way ranked lists from different spaces merge.

Raw scores from dense cosine, BM25 and other collections are not comparable, so fusion uses
ranks only: an item's fused score is ``sum(weight / (k + rank))`` over the lists it appears in
(rank 1-based). Items are identified by :attr:`RetrievedHit.dedupe_key`, so the same evidence
found by two lists (or two collections) is one fused item, represented by its best-ranked hit.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.plugins.payloads import RetrievedHit


@dataclass(frozen=True, slots=True)
class RankedList:
    """One ranked list entering fusion; ``name`` labels its rank in the fused hit's scores."""

    name: str
    hits: Sequence[RetrievedHit]
    weight: float = 1.0


@dataclass(slots=True)
class _Fused:
    hit: RetrievedHit
    best_rank: int
    score: float
    scores: dict[str, float]
    collections: set[str]
    head_score: float = 0.0
    leads: bool = False  # within some list's head


def rrf_fuse(
    lists: Sequence[RankedList],
    *,
    k: int = 60,
    head: int | None = None,
    score_name: str = "rrf",
) -> list[RetrievedHit]:
    """Fuse ranked lists; ties break on the best single rank, then on the chunk id.

    The result does not depend on the order of ``lists``. Within one list only the first
    occurrence of an item counts, so a list cannot vote twice for the same evidence.

    With ``head``, only the first ``head`` items of each list vote for the head of the result
    (the items found in some list's head, scored by those votes alone); the rest follows, fused
    over the full lists. So the order of the first results does not depend on how deep the
    lists are (asking for 100 passages never reorders the first ten), and a weak list's long
    tail cannot outvote a strong list's top. Measured offline on the shipped datasets (nDCG@10,
    heads of 20 vs full lists of 100): cmrc2018 0.986 vs 0.984, pubmedqa 0.982 vs 0.980,
    msmarco 0.787 vs 0.788. Both parts come from one pass over the lists.
    """
    if head is not None and head < 1:
        raise InvalidInputError("the RRF head must be at least 1", head=head)
    if k < 1:
        raise InvalidInputError("the RRF constant k must be at least 1", k=k)
    fused: dict[Hashable, _Fused] = {}
    for ranked in lists:
        if ranked.weight < 0:
            raise InvalidInputError("RRF weights must not be negative", list=ranked.name)
        seen: set[Hashable] = set()
        rank = 0
        for position, hit in enumerate(ranked.hits):
            key = hit.dedupe_key
            if key in seen:
                continue
            seen.add(key)
            rank += 1
            contribution = ranked.weight / (k + rank)
            entry = fused.get(key)
            if entry is None:
                entry = fused[key] = _Fused(hit, rank, 0.0, dict(hit.scores), set())
            elif (rank, hit.chunk_id) < (entry.best_rank, entry.hit.chunk_id):
                entry.hit, entry.best_rank = hit, rank
            entry.score += contribution
            if head is None or position < head:
                entry.head_score += contribution
                entry.leads = True
            entry.scores.update(hit.scores)
            entry.scores[f"{ranked.name}_rank"] = float(rank)
            entry.collections.add(hit.collection)
    leading = sorted(
        (e for e in fused.values() if e.leads),
        key=lambda e: (-e.head_score, e.best_rank, e.hit.chunk_id),
    )
    following = sorted(
        (e for e in fused.values() if not e.leads),
        key=lambda e: (-e.score, e.best_rank, e.hit.chunk_id),
    )
    return [_finish(e, e.head_score, score_name) for e in leading] + [
        _finish(e, e.score, score_name) for e in following
    ]


def _finish(entry: _Fused, score: float, score_name: str) -> RetrievedHit:
    hit = entry.hit
    metadata: Mapping[str, Any] = hit.metadata
    if len(entry.collections) > 1:
        metadata = {**metadata, "collections": sorted(entry.collections)}
    entry.scores[score_name] = score
    # Built directly: dataclasses.replace was a third of the fusion's time (two fusions of up
    # to 200 hits per search).
    return RetrievedHit(
        chunk_id=hit.chunk_id,
        collection=hit.collection,
        document_id=hit.document_id,
        kb_name=hit.kb_name,
        text=hit.text,
        path=hit.path,
        score=score,
        scores=entry.scores,
        source_chunk_id=hit.source_chunk_id,
        metadata=metadata,
    )
