"""The built-in engine: the whole Eagle-RAG pipeline (Knowhere, hybrid search, RRF, rerank).

It runs natively — ingest is the IngestPipeline and retrieval the RetrievalService — so it has
no port methods (it is an EngineDescription, not a KnowledgeEngine): it declares its
capabilities and schemas, and checks a new KB's chunking settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagle_rag.engines.base import DOC_INGESTION, DOC_PARSING
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.errors import InvalidInputError

NAME = "eagle"


class EagleEngine:
    name = NAME
    description = (
        "Eagle-RAG's own pipeline: structure-aware chunking, dense + BM25 retrieval, RRF, "
        "reranking and parent-document expansion."
    )
    capabilities = (DOC_INGESTION, DOC_PARSING)
    # Per-query knobs of the native engine are the request's own fields (mode, rerank, top_k...).
    retrieval_schema: tuple[SchemaItem, ...] = ()

    def __init__(self, *, chunk_size: int = 400, chunk_overlap: int = 40) -> None:
        self.creation_schema = (
            SchemaItem(
                "chunk_size",
                "integer",
                {"en_US": "Chunk size (tokens)", "zh_Hans": "分块大小"},
                default=chunk_size,
                minimum=16,
                maximum=8192,
            ),
            SchemaItem(
                "chunk_overlap",
                "integer",
                {"en_US": "Chunk overlap (tokens)", "zh_Hans": "分块重叠"},
                default=chunk_overlap,
                minimum=0,
                maximum=4096,
            ),
        )

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        if settings.get("chunk_overlap", 0) * 2 >= settings.get("chunk_size", 1):
            raise InvalidInputError(
                "creation_settings: chunk_overlap must be less than half of chunk_size",
                field="chunk_overlap",
            )

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """Vectors, files and rows go through the deletion service."""
