"""Dense pseudo-relevance feedback for entity queries (RETRIEVE_SUPPLEMENT).

A claim and the abstract that answers it name the same entities in different words ("TGF-β1
induces EndMT" against a passage on endothelial-to-mesenchymal transition); the query's vector
alone sits between the two vocabularies. Rocchio's feedback moves it toward its best passages:
``q' = unit(q) + weight * mean(unit(top passages))``, and the text plans' heads are reordered
by their similarity to q'. The top passages are the plans' own first hits, merged as Core merges
the plans (RRF); every vector is the one stored in Milvus, read back by id (no second
embedding). The reordered heads join Core's RRF as a supplement list, so the feedback can lift
a passage the plans ranked lower but never removes one, and never reaches outside the hits
the plans found in the query's scope.

Why the heads and not a second ANN search with q': on the full SciFact training run the two
scored alike (nDCG@10 0.7221 vs 0.7226 offline), and a dense search costs ~26 ms on Milvus Lite
over 9,408 chunks against ~9 ms to read 40 vectors by id (2026-12-03). 3 passages and weight
1.0 were best on the dev half among 2-4 passages and weights 0.5-2, all within about 0.005
nDCG@10 of each other (benchmarks/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def feedback_vector(
    query: Sequence[float], passages: Sequence[Sequence[float]], weight: float
) -> list[float] | None:
    """``unit(unit(query) + weight * mean(unit(passages)))``, or None when there is nothing to
    move toward (no passages, or vectors of another dimension than the query's)."""
    q = _unit(np.asarray(query, dtype=np.float64))
    if q is None or not passages:
        return None
    rows = np.asarray(passages, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != q.shape[0]:
        return None
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    nonzero = norms[:, 0] > 0
    usable = rows[nonzero] / norms[nonzero]
    if not len(usable):
        return None
    moved = _unit(q + weight * usable.mean(axis=0))
    return None if moved is None else moved.tolist()


def cosines(vector: Sequence[float], passages: Sequence[Sequence[float]]) -> list[float]:
    """Cosine similarity of ``vector`` to each passage vector (0 for a zero or mismatched one)."""
    q = _unit(np.asarray(vector, dtype=np.float64))
    out = []
    for passage in passages:
        p = _unit(np.asarray(passage, dtype=np.float64))
        out.append(float(q @ p) if q is not None and p is not None and p.shape == q.shape else 0.0)
    return out


def _unit(vector: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return vector / norm
