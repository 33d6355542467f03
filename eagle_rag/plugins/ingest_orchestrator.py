"""IngestOrchestrator: CLASSIFY_* -> EMBED_* -> UPSERT_VECTORS for one document's chunks.

Planning classifies every chunk and validates every (collection, encoder) pair before anything is
embedded or written; execution embeds in batches and hands rows to UPSERT_VECTORS. All three hooks
fail fast: the pipeline around this rolls back what was written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.errors import PluginError
from eagle_rag.index.collections import BM25_TEXT_KEY
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.encoder_registry import EncoderRegistry
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import (
    ClassificationDecision,
    EmbeddingBatch,
    EmbedRequest,
    TextChunk,
    UpsertBatch,
    VisualChunk,
    VisualEmbedRequest,
)
from eagle_rag.tracing import traced

Record = TextChunk | VisualChunk
ProgressCallback = Callable[[int, int], None]
ImageLoader = Callable[[VisualChunk], bytes]


@dataclass(frozen=True, slots=True)
class PlannedWrite:
    """One record bound for one collection, embedded by one encoder."""

    record: Record
    decision: ClassificationDecision


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """What was written, per collection (the document's ``collections_used``)."""

    written: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def collections(self) -> tuple[str, ...]:
        return tuple(sorted(c for c, ids in self.written.items() if ids))

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self.written.values())


class IngestOrchestrator:
    """Drives one document's records through the classify, embed and upsert hooks."""

    def __init__(self, bus: HookBus, encoders: EncoderRegistry) -> None:
        self._bus = bus
        self._encoders = encoders
        self.tracing = bus.tracing

    @traced("classify", ingest=True)  # one stage for the whole per-chunk loop
    async def plan(
        self, chunks: Sequence[TextChunk], visuals: Sequence[VisualChunk], ctx: HookContext
    ) -> list[PlannedWrite]:
        planned: list[PlannedWrite] = []
        validated: set[tuple[str, str]] = set()
        records: list[Record] = [*chunks, *visuals]
        for record in records:
            if isinstance(record, TextChunk):
                routes = await self._bus.invoke_first(hooks.classify_chunk, ctx=ctx, chunk=record)
            else:
                routes = await self._bus.invoke_first(hooks.classify_visual, ctx=ctx, visual=record)
            if not routes:
                raise PluginError(
                    f"no classifier routed chunk {record.chunk_id!r}",
                    hook="CLASSIFY_CHUNK" if isinstance(record, TextChunk) else "CLASSIFY_VISUAL",
                    document_id=record.document_id,
                )
            for decision in _exclusive(routes):
                pair = (decision.collection, decision.encoder)
                if pair not in validated:
                    self._encoders.validate_plan(*pair)
                    validated.add(pair)
                planned.append(PlannedWrite(record, decision))
        return planned

    async def execute(
        self,
        planned: Sequence[PlannedWrite],
        ctx: HookContext,
        *,
        batch_size: int,
        on_progress: ProgressCallback | None = None,
        load_image: ImageLoader | None = None,
    ) -> IngestOutcome:
        written: dict[str, list[str]] = {}
        done = 0
        if on_progress is not None and planned:  # the phase shows before the first batch ends
            on_progress(0, len(planned))
        for group in _batches(planned, batch_size):
            decision = group[0].decision
            batch = await self._embed(group, ctx, load_image)
            rows = tuple(
                _row(item.record, vector) for item, vector in zip(group, batch.vectors, strict=True)
            )
            result = await self._bus.invoke_transform(
                hooks.upsert_vectors, UpsertBatch(decision.collection, rows), ctx=ctx
            )
            if len(result.written_ids) != len(rows):
                raise PluginError(
                    f"UPSERT_VECTORS persisted {len(result.written_ids)} of {len(rows)} rows "
                    f"for {decision.collection!r}",
                    hook="UPSERT_VECTORS",
                    collection=decision.collection,
                )
            written.setdefault(decision.collection, []).extend(result.written_ids)
            done += len(group)
            if on_progress is not None:
                on_progress(done, len(planned))
        return IngestOutcome({c: tuple(ids) for c, ids in written.items()})

    async def _embed(
        self, group: Sequence[PlannedWrite], ctx: HookContext, load_image: ImageLoader | None
    ) -> EmbeddingBatch:
        encoder = group[0].decision.encoder
        first = group[0].record
        batch: EmbeddingBatch | None
        if isinstance(first, TextChunk):
            texts = tuple(item.record.text for item in group if isinstance(item.record, TextChunk))
            request = EmbedRequest(texts, encoder, "passage")
            batch = await self._bus.invoke_first(hooks.embed_text, ctx=ctx, request=request)
        else:
            visuals = [item.record for item in group if isinstance(item.record, VisualChunk)]
            images: tuple[bytes, ...] = ()
            if getattr(self._encoders.get(encoder), "takes_images", True):
                if load_image is None:
                    raise PluginError("visual chunks need an image loader", hook="EMBED_VISUAL")
                # Object-store reads (a local disk or S3): off the event loop.
                images = tuple(await asyncio.to_thread(lambda: [load_image(v) for v in visuals]))
            summaries = tuple(v.content_summary for v in visuals)
            visual = VisualEmbedRequest(images, encoder, summaries)
            batch = await self._bus.invoke_first(hooks.embed_visual, ctx=ctx, request=visual)
        if batch is None:
            raise PluginError(f"no subscriber embedded with encoder {encoder!r}", encoder=encoder)
        expected = self._encoders.get(encoder).dim
        if len(batch.vectors) != len(group) or any(len(v) != expected for v in batch.vectors):
            raise PluginError(
                f"encoder {encoder!r} returned {len(batch.vectors)} vectors for {len(group)} "
                f"inputs, or vectors not {expected}-d",
                encoder=encoder,
            )
        return batch


def _exclusive(routes: Sequence[ClassificationDecision]) -> list[ClassificationDecision]:
    """Routes in order, keeping only the first of each exclusive group (no duplicate writes)."""
    kept, groups = [], set()
    for decision in routes:
        if decision.exclusive_group is not None:
            if decision.exclusive_group in groups:
                continue
            groups.add(decision.exclusive_group)
        kept.append(decision)
    return kept


def _batches(planned: Sequence[PlannedWrite], size: int) -> list[list[PlannedWrite]]:
    """Consecutive batches that share one collection and encoder (one embed + upsert call)."""
    groups: dict[tuple[str, str, bool], list[PlannedWrite]] = {}
    for item in planned:
        key = (item.decision.collection, item.decision.encoder, isinstance(item.record, TextChunk))
        groups.setdefault(key, []).append(item)
    return [items[i : i + size] for items in groups.values() for i in range(0, len(items), size)]


def _with_headings(chunk: TextChunk) -> str:
    """A chunk's BM25 text: the headings of its section below the document's title, then its
    text. A passage rarely repeats the heading it sits under ("4 保修 Warranty" over "标准保修期为
    5 年"; "3.2 Annual leave" over "25 days a year"), so without them "X5 warranty" found the
    section only through the document's summary, and then the wrong chunks of it."""
    _, _, headings = chunk.path.partition("/")
    return f"{headings.replace('/', ' ')}\n{chunk.text}" if headings else chunk.text


def _row(record: Record, vector: Sequence[float]) -> dict[str, Any]:
    """The vector-store row of a record (field names match eagle_text / eagle_visual)."""
    if isinstance(record, TextChunk):
        metadata = dict(record.metadata)
        metadata.update(start_offset=record.start_offset, end_offset=record.end_offset)
        return {
            "id": record.chunk_id,
            "document_id": record.document_id,
            "kb_name": record.kb_name,
            "text": record.text,
            "path": record.path,
            "level": record.level,
            "type": record.type,
            "chunk_index": record.chunk_index,
            "page_nums": list(record.page_nums),
            "metadata": metadata,
            "dense": list(vector),
            BM25_TEXT_KEY: _with_headings(record),
        }
    return {
        "id": record.chunk_id,
        "document_id": record.document_id,
        "kb_name": record.kb_name,
        "image_id": record.image_id,
        "page": record.page,
        "position": record.position,
        "chunk_type": record.chunk_type,
        "parent_section": record.parent_section,
        "content_summary": record.content_summary,
        "source_chunk_id": record.source_chunk_id or "",
        "metadata": dict(record.metadata),
        "dense": list(vector),
    }
