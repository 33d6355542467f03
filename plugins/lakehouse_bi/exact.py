"""Exact-name matches: the chunks of objects a question names, found by a scalar query on
``metadata.name`` (no embedding involved), and ranked so the named object comes first.

BM25 splits ``net_amount`` into ``net`` and ``amount`` and the embedder blurs it, so a
question that names a column would otherwise rank every chunk about amounts alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import Filter, all_of, json_in
from eagle_rag.index.vector_store import VectorHit
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.hits import to_hit
from plugins.lakehouse_bi.hints import name_candidates

EXACT_KEY = "lakehouse_exact"
EXACT_LIMIT = 200
SUMMARY = "summary"
# Among objects with the same name: what a question naming it most likely means.
_TYPE_ORDER = {"column": 0, "measure": 1, "metric": 1, "dimension": 2, "model": 3}


def exact_hits(vectors: object, identifiers: Sequence[str], where: Filter) -> list[RetrievedHit]:
    """Chunks whose object name (or model.name) is one of ``identifiers``, best match first."""
    if not identifiers:
        return []
    names = {name_candidates(i)[1] for i in identifiers} | set(identifiers)
    condition = all_of(where, json_in("metadata", "name_lower", sorted(names)))
    rows = vectors.query(TEXT_COLLECTION, condition, limit=EXACT_LIMIT)  # type: ignore[attr-defined]
    ranked: list[tuple[tuple[int, int, int], RetrievedHit]] = []
    for row in rows:
        fields = row.get("metadata") or {}
        if fields.get("object_type") in (None, SUMMARY):
            continue
        quality = _quality(fields, identifiers)
        if quality is None:
            continue
        hit = to_hit(TEXT_COLLECTION, VectorHit(str(row["id"]), 1.0, row), stage="exact_name")
        ranked.append((quality, hit))
    ranked.sort(key=lambda pair: pair[0])
    return [
        replace(h, metadata={**h.metadata, EXACT_KEY: rank}, score=1.0 / (rank + 1))
        for rank, (_, h) in enumerate(ranked)
    ]


def _quality(fields: dict[str, object], identifiers: Sequence[str]) -> tuple[int, int, int] | None:
    """Lower is better: (how exactly it was named, its place in the question, its type)."""
    name = str(fields.get("name_lower", ""))
    model = str(fields.get("model", "")).lower()
    kind = _TYPE_ORDER.get(str(fields.get("object_type")), 4)
    for position, identifier in enumerate(identifiers):
        parent, leaf = name_candidates(identifier)
        if identifier == name:
            return (0, position, kind)
        if parent and leaf == name and (model == parent or model.endswith("." + parent)):
            return (0, position, kind)
        if not parent and leaf == name:
            return (1, position, kind)
        if parent and leaf == name:
            return (2, position, kind)
    return None


def exact_first(merged: Sequence[RetrievedHit], exact: Iterable[RetrievedHit]) -> tuple[RetrievedHit, ...]:
    """The merged list with exact matches moved to the front, in their exact order."""
    named = [h for h in exact if EXACT_KEY in h.metadata]
    if not named:
        return tuple(merged)
    named.sort(key=lambda h: int(h.metadata[EXACT_KEY]))
    by_key = {h.dedupe_key: h for h in merged}
    front: list[RetrievedHit] = []
    seen: set[tuple[str, ...]] = set()
    for hit in named:
        if hit.dedupe_key in seen:
            continue
        seen.add(hit.dedupe_key)
        front.append(by_key.get(hit.dedupe_key, hit))
    rest = [h for h in merged if h.dedupe_key not in seen]
    return (*front, *rest)
