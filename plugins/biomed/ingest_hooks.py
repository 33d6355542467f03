"""Ingest hooks: CHUNK (IMRaD section + entities), CLASSIFY_CHUNK (route), UPSERT_VECTORS.

CHUNK learns the document's abbreviations first, so a short form defined in the abstract's
first sentence is recognised in all its chunks. Chunks naming an entity go to the specialized
collection instead of eagle_text (one ``exclusive_group``: written once); the rest stay Core's.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.plugins.payloads import (
    ClassificationDecision,
    DocumentSource,
    TextChunk,
    UpsertBatch,
)
from plugins.biomed.abbreviations import find_pairs
from plugins.biomed.collection import DOCUMENT_KEY, ENTITIES_KEY, SECTION_KEY, with_entity_fields
from plugins.biomed.runtime import BiomedRuntime
from plugins.biomed.sections import chunk_section

EXCLUSIVE_GROUP = "biomed:text"


class IngestHooks:
    """The ingest-side subscribers of one app's biomed plugin."""

    def __init__(self, runtime: BiomedRuntime) -> None:
        self._rt = runtime

    async def enrich_chunks(
        self, chunks: tuple[TextChunk, ...], source: DocumentSource
    ) -> tuple[TextChunk, ...]:
        """CHUNK: add ``biomed_section``, ``biomed_entities``; text, path and order untouched."""
        return await asyncio.to_thread(self._enrich, chunks)

    def _enrich(self, chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        finder = self._rt.finder
        pairs = [pair for chunk in chunks for pair in find_pairs(chunk.text)]
        finder.learn(pairs)
        found = []
        for chunk in chunks:
            counts = Counter(m.concept_id for m in finder.mentions(chunk.text))
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

    def classify_chunk(self, chunk: TextChunk) -> tuple[ClassificationDecision, ...] | None:
        """CLASSIFY_CHUNK: entity-bearing chunks to the specialized collection, else abstain.

        With ``route_by: document`` (the default) a chunk goes with its document: every chunk
        of a document that names an entity anywhere goes to the specialized collection, so a
        section's chunks are never split over two collections (parent expansion drills down
        inside the summary's collection) and one document is searched in one place.
        """
        rt = self._rt
        entities = chunk.metadata.get(ENTITIES_KEY) or ()
        by_document = rt.options.route_by == "document" and chunk.metadata.get(DOCUMENT_KEY)
        if not entities and not by_document:
            return None
        return (
            ClassificationDecision(
                rt.collection,
                rt.passage_encoder,
                exclusive_group=EXCLUSIVE_GROUP,
                reason=f"biomed: names {len(entities)} lexicon entities"
                if entities
                else "biomed: its document names lexicon entities",
            ),
            # Same group: never written while the first target is (documents the fallback).
            ClassificationDecision(
                TEXT_COLLECTION,
                rt.text_encoder,
                exclusive_group=EXCLUSIVE_GROUP,
                reason="biomed: base fallback",
            ),
        )

    async def upsert(self, batch: UpsertBatch) -> UpsertBatch:
        """UPSERT_VECTORS: write the specialized collection's rows (Core writes the base ones)."""
        if batch.written_ids or batch.collection != self._rt.collection:
            return batch
        rows = [with_entity_fields(row) for row in batch.rows]
        await asyncio.to_thread(self._rt.vectors.upsert, batch.collection, rows)
        return replace(batch, written_ids=tuple(str(row["id"]) for row in rows))
