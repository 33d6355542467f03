"""Dense pseudo-relevance feedback for entity queries (RETRIEVE_SUPPLEMENT).

A claim and the abstract that answers it name the same entities in different words ("TGF-β1
induces EndMT" against a passage on endothelial-to-mesenchymal transition); the query's vector
alone sits between the two vocabularies. Rocchio's feedback moves it toward its best passages:
``q' = q + weight * mean(top passages)`` (both unit length), and eagle_text is searched again with
q', in the query's scope. The top passages are the plans' own first hits, merged as Core merges
the plans (RRF), and read back from Milvus by id (their stored vectors, no second embedding).
The list joins Core's RRF as a supplement, so it can lift a passage the plans ranked low but
never removes one they ranked high.

Measured offline on SciFact's training claims (benchmarks/RESULTS.md, 2026-12-03): 3 passages
and weight 1.0 were best on the dev half among 2-4 passages and weights 0.5-2 (the spread was
about 0.005 nDCG@10 across them, so the default is not fitted to one value).
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
    usable = rows[norms[:, 0] > 0] / norms[norms[:, 0] > 0]
    if not len(usable):
        return None
    moved = _unit(q + weight * usable.mean(axis=0))
    return None if moved is None else moved.tolist()


def _unit(vector: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return vector / norm
