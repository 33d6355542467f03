"""Scoring of merged hits: one fusion across the text collections, then entity/section signals.

Both functions are pure: they take hits and return hits, so they are tested without an app.

- :func:`refuse_text_collections` (RRF_POST_MERGE): entity-bearing chunks live in the
  specialized collection and the rest in eagle_text, so one corpus is split in two. RRF of the
  two plans would rank the best of a small leftover collection level with the best of the main
  one. When both plans embed with the same encoder their dense scores are comparable, so the
  plans' dense and BM25 hits are fused again as if from one collection, with Core's own rule
  (rescaled scores over heads, eagle_rag.retrieval.fusion.normalized_fuse); the supplement list
  joins with its weight.
- :func:`rerank_with_signals` (RERANK_MERGED): ``final = fused / best fused + w_entity *
  entity overlap + w_section * section match (+ w_ce * cross-encoder score rescaled to [0,1])``,
  where entity overlap is the IDF-weighted share of the query's entities the passage names.
  ``final`` is kept as ``scores["biomed_rerank"]``; it orders and is no relevance, so a hit's
  shown relevance stays its plan's (or, with a cross-encoder, the model's raw score as
  ``scores["rerank"]``, read as Core's reranker's is: eagle_rag/retrieval/relevance.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.fusion import RankedList, normalized_fuse
from plugins.biomed.collection import hit_entities, hit_section
from plugins.biomed.options import RerankWeights

BM25_ZERO = 0.0


def refuse_text_collections(
    merged: Sequence[RetrievedHit],
    supplements: Sequence[RetrievedHit],
    *,
    head: int,
    supplement_weight: float,
    sparse_tells_relevance: bool = True,
) -> list[RetrievedHit]:
    """One rescaled-score fusion of every dense and BM25 hit, whichever collection it is from.
    ``sparse_tells_relevance`` is False for a query of function words only (fusion.RankedList)."""
    pool = {h.dedupe_key: h for h in merged}
    for hit in supplements:
        pool.setdefault(hit.dedupe_key, hit)
    hits = list(pool.values())
    lists = [
        RankedList("dense", _by_score(hits, "dense")),
        RankedList(
            "sparse",
            _by_score(hits, "sparse"),
            zero=BM25_ZERO,
            tells_relevance=sparse_tells_relevance,
        ),
    ]
    if supplements and supplement_weight > 0:
        ranked = sorted(supplements, key=lambda h: -h.scores.get("supplement", 0.0))
        lists.append(
            RankedList("supplement", _scored(ranked, "supplement"), supplement_weight, BM25_ZERO)
        )
    return normalized_fuse(lists, head=head, score_name="biomed_fused")


def _by_score(hits: Sequence[RetrievedHit], stage: str) -> list[RetrievedHit]:
    found = [h for h in hits if stage in h.scores]
    found.sort(key=lambda h: (-h.scores[stage], h.chunk_id))
    return _scored(found, stage)


def _scored(hits: Sequence[RetrievedHit], stage: str) -> list[RetrievedHit]:
    """The hits with ``score`` set to their ``stage`` score (what the fusion rescales)."""
    return [with_score(h, float(h.scores[stage])) for h in hits if stage in h.scores]


def with_score(
    hit: RetrievedHit, score: float, scores: Mapping[str, float] | None = None
) -> RetrievedHit:
    """``hit`` with a new score (and scores): ``dataclasses.replace`` without its field-by-field
    introspection, which was most of RRF_POST_MERGE's time (measured: 340 copies a query)."""
    return RetrievedHit(
        hit.chunk_id,
        hit.collection,
        hit.document_id,
        hit.kb_name,
        hit.text,
        hit.path,
        score,
        hit.scores if scores is None else scores,
        hit.source_chunk_id,
        hit.metadata,
    )


def entity_overlap(
    query_entities: Sequence[str], passage: set[str], idf: Callable[[str], float]
) -> float:
    """IDF-weighted share of the query's entities the passage names, in [0, 1]."""
    if not query_entities:
        return 0.0
    total = sum(idf(e) for e in query_entities)
    shared = sum(idf(e) for e in query_entities if e in passage)
    return shared / total if total > 0 else 0.0


def rerank_with_signals(
    hits: Sequence[RetrievedHit],
    *,
    query_entities: Sequence[str],
    preferred_sections: Sequence[str],
    idf: Callable[[str], float],
    weights: RerankWeights,
    cross_encoder: Mapping[int, float] | None = None,
) -> list[RetrievedHit]:
    """Hits reordered by the documented sum; each keeps its parts in ``scores``."""
    if not hits:
        return []
    best = max(h.score for h in hits) or 1.0
    raw = cross_encoder or {}
    ce = _rescaled(raw)
    rescored = []
    for index, hit in enumerate(hits):
        overlap = entity_overlap(query_entities, hit_entities(hit.metadata), idf)
        section = 1.0 if hit_section(hit.metadata) in preferred_sections else 0.0
        final = hit.score / best + weights.entity * overlap + weights.section * section
        parts = {"biomed_entity": overlap, "biomed_section": section}
        if index in ce:
            final += weights.cross_encoder * ce[index]
            parts["cross_encoder"] = ce[index]
            # The model's own score, as Core's reranker records it: relevance.py reads it as
            # the hit's relevance (it judges the pair alone, so it compares across queries).
            parts["rerank"] = float(raw[index])
        # The sum only orders (its best is ~1 plus bonuses): not a relevance, so not "rerank".
        scores = {**hit.scores, **parts, "biomed_rerank": final}
        rescored.append((final, index, with_score(hit, final, scores)))
    rescored.sort(key=lambda item: (-item[0], item[1]))
    return [hit for _, _, hit in rescored]


def _rescaled(scores: Mapping[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {i: ((s - low) / span if span > 0 else 1.0) for i, s in scores.items()}
