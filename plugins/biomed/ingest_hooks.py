"""Ingest hooks: CHUNK (IMRaD section + entities) and UPSERT_VECTORS (the biomed view).

CHUNK learns the document's abbreviations first, so a short form defined in the abstract's
first sentence is recognised in all its chunks. Every chunk is routed by Core to eagle_text
and stored there as Core stores it; the entity-bearing ones are also written to the specialized
collection, a second view of them with their entities and a concept-token BM25 text. Why a view
and not a move (an ``exclusive_group`` routing): a query that names no entity then searches
exactly what Core searches (one collection, one set of BM25 statistics), so its results are
Core's by construction; a query that names entities adds the view (query_hooks.py).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.plugins.payloads import DocumentSource, TextChunk, UpsertBatch
from plugins.biomed.abbreviations import find_pairs
from plugins.biomed.collection import DOCUMENT_KEY, ENTITIES_KEY, SECTION_KEY, biomed_row
from plugins.biomed.runtime import BiomedRuntime
from plugins.biomed.sections import chunk_section


class IngestHooks:
    """The ingest-side subscribers of one app's biomed plugin."""

    def __init__(self, runtime: BiomedRuntime) -> None:
        self._rt = runtime

    async def enrich_chunks(
        self, chunks: tuple[TextChunk, ...], source: DocumentSource
    ) -> tuple[TextChunk, ...]:
        """CHUNK: add ``biomed_section``, ``biomed_entities``; text, path and order untouched."""
        return await asyncio.to_thread(self._enrich, chunks, source.kb_name)

    def _enrich(self, chunks: tuple[TextChunk, ...], kb_name: str) -> tuple[TextChunk, ...]:
        """Abbreviations are learned for, and resolved with, the document's own KB only."""
        finder = self._rt.finder
        pairs = [pair for chunk in chunks for pair in find_pairs(chunk.text)]
        finder.learn(kb_name, pairs)
        found = []
        for chunk in chunks:
            counts = Counter(m.concept_id for m in finder.mentions(chunk.text, (kb_name,)))
            entities = [cid for cid, _ in counts.most_common(self._rt.options.max_chunk_entities)]
            finder.book.observe_entities(entities)
            found.append(entities)
        document = any(found)
        enriched = tuple(
            replace(
                chunk,
                metadata={
                    **chunk.metadata,
                    SECTION_KEY: chunk_section(chunk.path, chunk.text),
                    ENTITIES_KEY: entities,
                    DOCUMENT_KEY: document,
                },
            )
            for chunk, entities in zip(chunks, found, strict=True)
        )
        finder.book.save_if_due()
        return enriched

    def mirrored(self, row: Mapping[str, Any]) -> bool:
        """Whether a base row also goes to the specialized collection.

        With ``route_by: document`` (the default) every chunk of a document that names an
        entity anywhere goes (the specialized collection holds whole documents, so parent
        expansion finds a hit's section there too); with ``chunk`` only the chunks naming one.
        """
        metadata = row.get("metadata") or {}
        if metadata.get(ENTITIES_KEY):
            return True
        return self._rt.options.route_by == "document" and bool(metadata.get(DOCUMENT_KEY))

    async def upsert(self, batch: UpsertBatch) -> UpsertBatch:
        """UPSERT_VECTORS: copy a base batch's entity-bearing rows into the specialized view.

        Core still writes every row to eagle_text exactly as it would without the plugin (the
        batch goes on unchanged), so a query routed as in Core searches exactly what Core
        searches. The copies keep the row's id, text and vector (no second embedding when the
        collection shares the host's encoder) and add the entity fields and a BM25 text with
        one concept token per entity (see collection.py).
        """
        if batch.written_ids or batch.collection != TEXT_COLLECTION:
            return batch
        rows = [row for row in batch.rows if self.mirrored(row)]
        if rows:
            await asyncio.to_thread(self._write_view, rows)
        return batch

    def _write_view(self, rows: list[Mapping[str, Any]]) -> None:
        rt = self._rt
        vectors: Sequence[Any] = [row["dense"] for row in rows]
        if rt.passage_encoder != rt.text_encoder:  # a domain encoder: its own vectors
            encoder = rt.encoders.get(rt.passage_encoder)
            vectors = list(encoder.embed_passages([str(row["text"]) for row in rows]))
        view = [
            biomed_row({**row, "dense": list(vector)})
            for row, vector in zip(rows, vectors, strict=True)
        ]
        rt.vectors.upsert(rt.collection, view)
