"""A real domain plugin that can replace each of Core's steps, one at a time.

Every subscriber answers only while its step is switched on (``plugin.active``), so a test turns
on exactly the step it replaces and Core does the rest. It also provides its own ingest pipeline,
``lines`` (one chunk per line), chosen by its INGEST_ROUTE_SELECTORS subscriber.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.knowhere.tree import StructureTree, build_tree
from eagle_rag.models.embedders import HashingEncoder
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import PluginContext
from eagle_rag.plugins.contract import DOMAIN_PRIORITY, PluginManifest
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import (
    ClassificationDecision,
    CollectionQueryPlan,
    DocumentSource,
    EmbeddingBatch,
    EmbedRequest,
    ParseResult,
    QueryRequest,
    QueryRouteDecision,
    TextChunk,
    TextSection,
    UpsertBatch,
)

NAMESPACE = "probe"
LINES = "lines"
ENCODER = "probe-reversed"


class ReversedEncoder(HashingEncoder):
    """Hashes the reversed text: real, input-dependent vectors unlike the host encoder's."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.name = ENCODER

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed_passages([t[::-1] for t in texts])


class OverridePlugin:
    """Replaces whichever Core steps are in ``active``."""

    def __init__(self) -> None:
        self.manifest = PluginManifest(
            namespace=NAMESPACE, version="1.0.0", provides_pipelines=(LINES,)
        )
        self.active: set[str] = set()
        self.rows: list[Mapping[str, Any]] = []
        self.encoder: ReversedEncoder | None = None

    def on_load(self, ctx: PluginContext) -> None:
        self.encoder = ReversedEncoder(ctx.settings.milvus.text_dim)
        ctx.register_encoder(ENCODER, self.encoder)

    def ensure_collections(self, ctx: PluginContext) -> None:
        """Writes go to the base collection."""

    def register_hooks(self, bus: HookBus) -> None:
        for hook, handler in (
            (hooks.ingest_route_selectors, self.route),
            (hooks.parse_document, self.parse_document),
            (hooks.build_structure, self.build_structure),
            (hooks.chunk_document, self.chunk_document),
            (hooks.classify_chunk, self.classify_chunk),
            (hooks.embed_text, self.embed_text),
            (hooks.upsert_vectors, self.upsert_vectors),
            (hooks.classify_query, self.classify_query),
        ):
            bus.subscribe(hook, handler, plugin=NAMESPACE, priority=DOMAIN_PRIORITY)

    def on_unload(self) -> None:
        self.rows = []

    # --- the replacements ------------------------------------------------------------------------

    def route(self, source: DocumentSource) -> str | None:
        if "route" in self.active:
            return str(source.metadata.get("pipeline", LINES))
        return None

    def parse_document(self, source: DocumentSource, data: bytes, pipeline: str) -> Any:
        if pipeline == LINES or "parse" in self.active:
            lines = data.decode("utf-8").splitlines()
            if "parse" in self.active:
                lines = [line.upper() for line in lines]
            sections = tuple(TextSection(line) for line in lines if line.strip())
            return ParseResult("\n".join(lines), sections)
        return None

    def build_structure(self, parsed: ParseResult, pipeline: str) -> StructureTree | None:
        if pipeline == LINES or "structure" in self.active:
            # One flat section: the plugin ignores the document's headings.
            flat = tuple(replace(s, heading=None, level=0) for s in parsed.sections)
            return build_tree(ParseResult(parsed.text, flat), title="Probe Title")
        return None

    def chunk_document(
        self, tree: StructureTree, source: DocumentSource, pipeline: str
    ) -> tuple[TextChunk, ...] | None:
        if pipeline != LINES and "chunk" not in self.active:
            return None
        blocks = [block for section in tree.sections for block in section.blocks]
        return tuple(
            TextChunk(
                chunk_id=f"{source.document_id}-line-{n}",
                document_id=source.document_id,
                kb_name=source.kb_name,
                text=block.text,
                path=tree.sections[0].path,
                level=0,
                chunk_index=n,
                metadata={"chunker": "probe"},
            )
            for n, block in enumerate(blocks)
        )

    def classify_chunk(self, chunk: TextChunk) -> tuple[ClassificationDecision, ...] | None:
        if "classify" in self.active:
            return (ClassificationDecision(TEXT_COLLECTION, ENCODER, reason="probe"),)
        return None

    def embed_text(self, request: EmbedRequest) -> EmbeddingBatch | None:
        if "embed" not in self.active or request.purpose != "passage" or self.encoder is None:
            return None
        vectors = self.encoder.embed_passages(list(request.texts))
        return EmbeddingBatch(request.encoder, self.encoder.dim, vectors.tolist())

    def upsert_vectors(self, batch: UpsertBatch) -> UpsertBatch | None:
        if "upsert" not in self.active:
            return None
        self.rows.extend(batch.rows)
        return replace(batch, written_ids=tuple(str(row["id"]) for row in batch.rows))

    def classify_query(self, query: QueryRequest) -> QueryRouteDecision | None:
        if "classify_query" not in self.active:
            return None
        plan = CollectionQueryPlan(TEXT_COLLECTION, "", query.top_k, reason="probe: BM25 only")
        return QueryRouteDecision((plan,), classifier=NAMESPACE, reason="probe")


plugin = OverridePlugin
