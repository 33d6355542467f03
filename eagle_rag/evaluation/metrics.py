"""Ranking metrics over document ids, the way trec_eval computes them (linear gains)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

Metric = Callable[[Sequence[str], Mapping[str, int], int], float]


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    gains = [relevant.get(doc, 0) for doc in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for position, doc in enumerate(ranked[:k], start=1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / position
    return 0.0


def hit_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    return 1.0 if any(relevant.get(doc, 0) > 0 for doc in ranked[:k]) else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def score_run(
    runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Mean of every metric over the judged queries (a query with no run scores zero; no judged
    query at all scores zero too, rather than dividing by it)."""
    metrics: dict[str, tuple[Metric, int]] = {
        "ndcg@10": (ndcg_at, 10),
        "recall@10": (recall_at, 10),
        "recall@100": (recall_at, 100),
        "mrr@10": (mrr_at, 10),
        "hit@5": (hit_at, 5),
    }
    count = len(qrels) or 1
    return {
        name: sum(metric(runs.get(qid, ()), rel, k) for qid, rel in qrels.items()) / count
        for name, (metric, k) in metrics.items()
    }
