"""The specialized collection ``eagle_text_biomed``: its spec, its rows and its entity filter.

It holds a second view of the entity-bearing chunks Core stores in eagle_text (same ids, text
and vectors): eagle_text's fields plus two scalar fields, ``biomed_entities`` (space-joined
lexicon ids, for display and export) and ``biomed_section`` (IMRaD); the same values sit in the
row's ``metadata`` JSON, where ``json_contains_any`` filters on them. Its BM25 text is the
chunk's text plus one concept token per entity, so BM25 here matches concepts as well as words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eagle_rag.errors import PluginError
from eagle_rag.index.collections import BM25_TEXT_KEY, CollectionSpec
from eagle_rag.index.filters import Filter, literal

ENTITY_FIELD = "biomed_entities"
SECTION_FIELD = "biomed_section"
ENTITIES_KEY = "biomed_entities"  # in chunk / row metadata: list of ids
SECTION_KEY = "biomed_section"
DOCUMENT_KEY = "biomed_document"  # the chunk's document names an entity somewhere
FIELD_CHARS = 1024  # extra VARCHAR fields' max length (eagle_rag.index.collections)
MAX_FILTER_ENTITIES = 32


def collection_spec(name: str, dim: int, encoder: str) -> CollectionSpec:
    """The view's spec; ``encoder`` (the model writing its vectors) is recorded on it, so a
    later start with another encoder of the same dimension is refused, not searched."""
    return CollectionSpec(
        name, "text", dim, extra_varchar_fields=(ENTITY_FIELD, SECTION_FIELD), encoder=encoder
    )


def check_encoder_dims(collection: str, passage: Any, query: Any) -> int:
    """The collection's dimension: its passage and query encoders must agree on it."""
    if int(passage.dim) != int(query.dim):
        raise PluginError(
            f"the biomed collection {collection!r} is written by {passage.name!r} "
            f"({passage.dim}-d) but queried with {query.name!r} ({query.dim}-d); "
            "both encoders must make vectors of one dimension",
            plugin="biomed",
            collection=collection,
        )
    return int(passage.dim)


def biomed_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A base row's copy for the specialized collection: same id, text and vector, its scalar
    entity fields filled from metadata, and its BM25 text with the concept tokens."""
    metadata = row.get("metadata") or {}
    entities = [str(e) for e in metadata.get(ENTITIES_KEY, ())]
    joined = ""
    for entity in entities:  # whole ids only, never a cut one
        candidate = f"{joined} {entity}".strip()
        if len(candidate.encode("utf-8")) > FIELD_CHARS:
            break
        joined = candidate
    section = str(metadata.get(SECTION_KEY, ""))[:64]
    # The base row's BM25 text (its headings, then its text), so both collections match alike.
    base = row.get(BM25_TEXT_KEY) or row.get("text", "")
    bm25 = " ".join([str(base), *(concept_token(e) for e in entities)])
    return {**row, ENTITY_FIELD: joined, SECTION_FIELD: section, BM25_TEXT_KEY: bm25}


def concept_token(concept_id: str) -> str:
    """One BM25 word for a concept ("mesh:D009203" -> "bmcmeshd009203"): a passage and a query
    that name one concept by different synonyms or an abbreviation share this word, and its
    IDF is the concept's own (a word of letters and digits: the tokenizer keeps it whole)."""
    return "bmc" + "".join(ch for ch in concept_id.lower() if ch.isascii() and ch.isalnum())


def entity_filter(concept_ids: Sequence[str]) -> Filter:
    """Rows whose metadata names any of these entities."""
    if not concept_ids:
        raise PluginError("an entity filter needs at least one entity", plugin="biomed")
    values = ", ".join(literal(c) for c in list(concept_ids)[:MAX_FILTER_ENTITIES])
    return Filter(f'json_contains_any(metadata["{ENTITIES_KEY}"], [{values}])')


def hit_entities(metadata: Mapping[str, Any]) -> set[str]:
    """The entity ids a retrieved hit's row carries (eagle_text rows carry them too: the
    CHUNK hook's metadata)."""
    fields = metadata.get("fields")
    source: Iterable[Any] = ()
    if isinstance(fields, Mapping):
        source = fields.get(ENTITIES_KEY) or ()
    return {str(e) for e in source}


def hit_section(metadata: Mapping[str, Any]) -> str:
    fields = metadata.get("fields")
    return str(fields.get(SECTION_KEY, "")) if isinstance(fields, Mapping) else ""
