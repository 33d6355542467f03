"""One relevance score in [0, 1] per hit: what every surface shows as ``score`` and filters by.

A hit's fused value (RRF, ≈0.016 for the best hit of one KB) only orders results. The relevance
is read from what the hit's own lists scored, first match wins:

1. ``rerank``: the cross-encoder's score, which judges the (query, passage) pair on its own and
   is meant to be compared across queries (a logit outside [0, 1] is squashed by the sigmoid);
2. ``relevance``: set by :func:`eagle_rag.retrieval.fusion.plan_relevance` on every hit of a
   plan fused by scores (the default) — the weighted mean over the plan's lists of the hit's
   score on an absolute scale: BM25 as a share of the best BM25 score (from its true zero);
   cosine as how far the hit stands above the background of this query (the last hit of the
   list's head) on the way to a perfect match, ``(cos - last) / (1 - last)``. A list that missed
   the hit counts its floor. So the best hit of a query whose dense head is flat (nothing stands
   out) scores about half, and only a hit that both lists rank first and that is close to a
   perfect match nears 1;
3. a bridged engine's own score (Dify, RAGFlow, FastGPT answer similarities in [0, 1]; for
   FastGPT the bridge picks its rerank or embedding score, never the unbounded full-text one);
4. the raw dense cosine, clipped to [0, 1] (plans fused by RRF set no ``relevance``);
5. otherwise 0.

The raw per-list values stay in ``scores`` beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

RELEVANCE = "relevance"


def relevance(scores: Mapping[str, float], metadata: Mapping[str, Any] | None = None) -> float:
    """The hit's relevance in [0, 1] (rules in the module docstring), rounded to 4 places."""
    return round(_relevance(scores, metadata or {}), 4)


def _relevance(scores: Mapping[str, float], metadata: Mapping[str, Any]) -> float:
    if "rerank" in scores:
        return _unit(float(scores["rerank"]))
    if RELEVANCE in scores:
        return _clip(float(scores[RELEVANCE]))
    engine = metadata.get("engine")
    if isinstance(engine, str) and engine in scores:
        return _clip(float(scores[engine]))
    if "dense" in scores:
        return _clip(float(scores["dense"]))
    return 0.0


def _unit(score: float) -> float:
    if 0.0 <= score <= 1.0:
        return score
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, score))))


def _clip(score: float) -> float:
    if math.isnan(score):
        return 0.0
    return max(0.0, min(1.0, score))
