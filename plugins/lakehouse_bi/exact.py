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
from plugins.lakehouse_bi.hints import QuestionTerms, name_candidates

EXACT_KEY = "lakehouse_exact"
# The first element of EXACT_KEY's quality: 0–2 how exactly the question names the object,
# this for a relation found by the grain the question asks for (named by no one).
GRAIN_MATCH = 3
EXACT_LIMIT = 200
SUMMARY = "summary"
# Among objects with the same name: what a question naming it most likely means.
_TYPE_ORDER = {"column": 0, "measure": 1, "metric": 1, "dimension": 2, "model": 3}


def exact_hits(
    vectors: object,
    identifiers: Sequence[str],
    where: Filter,
    prior: Sequence[RetrievedHit] = (),
) -> list[RetrievedHit]:
    """Chunks whose object name (or model.name) is one of ``identifiers``, best match first;
    equally good matches keep the order of ``prior`` (the searches' own ranking)."""
    position = {h.chunk_id: i for i, h in enumerate(prior)}
    if not identifiers:
        return []
    names = {name_candidates(i)[1] for i in identifiers} | set(identifiers)
    condition = all_of(where, json_in("metadata", "name_lower", sorted(names)))
    rows = vectors.query(TEXT_COLLECTION, condition, limit=EXACT_LIMIT)  # type: ignore[attr-defined]
    ranked: list[tuple[tuple[int, int, int, int], RetrievedHit]] = []
    for row in rows:
        fields = row.get("metadata") or {}
        if fields.get("object_type") in (None, SUMMARY):
            continue
        quality = _quality(fields, identifiers)
        if quality is None:
            continue
        hit = to_hit(TEXT_COLLECTION, VectorHit(str(row["id"]), 1.0, row), stage="exact_name")
        ranked.append(((*quality, position.get(hit.chunk_id, len(position))), hit))
    ranked.sort(key=lambda pair: pair[0])
    return [
        replace(h, metadata={**h.metadata, EXACT_KEY: list(quality[:3])}, score=1.0 / (rank + 1))
        for rank, (quality, h) in enumerate(ranked)
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


def exact_first(
    merged: Sequence[RetrievedHit], exact: Iterable[RetrievedHit]
) -> tuple[RetrievedHit, ...]:
    """The merged list with exact matches moved to the front: the best-named first, and among
    equally named objects (``payment_method`` of two models) the one the searches ranked higher.
    """
    named = [h for h in exact if EXACT_KEY in h.metadata]
    if not named:
        return tuple(merged)
    position = {h.dedupe_key: i for i, h in enumerate(merged)}
    named.sort(
        key=lambda h: (tuple(h.metadata[EXACT_KEY]), position.get(h.dedupe_key, len(merged)))
    )
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


GRAIN_LIMIT = 2000
_RELATION_TYPES = ("model", "source_table", "semantic_model", "view", "cube", "table")


def grain_hits(
    vectors: object, words: Sequence[str], where: Filter, prior: Sequence[RetrievedHit] = ()
) -> list[RetrievedHit]:
    """Relations whose grain is "one row per <word>" for a word the question asks per, ranked
    by the searches' own order (so "per order ... with its refunds" prefers the orders mart)."""
    if not words:
        return []
    stems = {w.lower().rstrip("s") for w in words if len(w) > 2}
    condition = all_of(where, json_in("metadata", "object_type", _RELATION_TYPES))
    rows = vectors.query(TEXT_COLLECTION, condition, limit=GRAIN_LIMIT)  # type: ignore[attr-defined]
    position = {h.chunk_id: i for i, h in enumerate(prior)}
    found: list[tuple[int, RetrievedHit]] = []
    for row in rows:
        grain = str((row.get("metadata") or {}).get("grain", "")).lower()
        keys = [k.strip() for k in grain.partition(" per ")[2].split(",") if k.strip()]
        if not any(
            k in (stem, f"{stem}s", f"{stem}_id", f"{stem}_key") for k in keys for stem in stems
        ):
            continue
        hit = to_hit(TEXT_COLLECTION, VectorHit(str(row["id"]), 1.0, row), stage="grain")
        found.append((position.get(hit.chunk_id, len(position) + len(found)), hit))
    found.sort(key=lambda pair: pair[0])
    return [
        replace(
            h, metadata={**h.metadata, EXACT_KEY: [GRAIN_MATCH, rank, 0]}, score=1.0 / (rank + 1)
        )
        for rank, (_, h) in enumerate(found)
    ]


def named_hits(
    vectors: object, terms: QuestionTerms, where: Filter, prior: Sequence[RetrievedHit] = ()
) -> list[RetrievedHit]:
    """Exact-name matches, then grain matches (each hit once), for one question."""
    found = exact_hits(vectors, terms.identifiers, where, prior)
    seen = {h.chunk_id for h in found}
    found += [h for h in grain_hits(vectors, terms.grain, where, prior) if h.chunk_id not in seen]
    return found
