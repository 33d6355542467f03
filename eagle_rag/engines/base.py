"""The KnowledgeEngine port: what a knowledge base is bound to.

The shape follows the langbot-plugin SDK (``KnowledgeEngine``: capabilities, creation and
retrieval schemas, lifecycle callbacks, ingest, delete_document, retrieve), in Eagle-RAG's own
types. The built-in engine ``eagle`` is the full pipeline; bridges forward to external
knowledge services. A query over KBs bound to different engines fuses their ranked lists by RRF.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from eagle_rag.engines.schema import SchemaItem
from eagle_rag.plugins.payloads import ParseResult, RetrievedHit

DOC_INGESTION = "doc_ingestion"
DOC_PARSING = "doc_parsing"  # the engine parses files itself (else it receives a ParseResult)


@dataclass(frozen=True, slots=True)
class EngineDocument:
    """A document handed to an engine: the original bytes, and the parse if it needs one."""

    document_id: str
    kb_name: str
    filename: str
    mime_type: str
    data: bytes
    creation_settings: Mapping[str, Any]
    parsed: ParseResult | None = None


@dataclass(frozen=True, slots=True)
class EngineIngestResult:
    chunks: int
    remote_id: str | None = None  # the engine's own id for the document, for deletion
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EngineQuery:
    text: str
    kb_name: str
    top_k: int
    creation_settings: Mapping[str, Any]
    retrieval_settings: Mapping[str, Any]


class EngineDescription(Protocol):
    """What every engine declares: capabilities, schemas and the KB lifecycle callbacks. The
    built-in engine is only this: its documents go through Eagle-RAG's own pipeline."""

    name: str
    description: str
    capabilities: tuple[str, ...]
    creation_schema: tuple[SchemaItem, ...]
    retrieval_schema: tuple[SchemaItem, ...]

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """Check the settings work (e.g. the remote dataset answers); raise to refuse the KB."""

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None: ...


@runtime_checkable
class KnowledgeEngine(EngineDescription, Protocol):
    """An engine Eagle-RAG drives through the port: it ingests, deletes and retrieves itself
    (the bridges, and plugin engines)."""

    async def ingest(self, document: EngineDocument) -> EngineIngestResult: ...

    async def delete_document(
        self, kb_name: str, remote_id: str, settings: Mapping[str, Any]
    ) -> bool: ...

    async def retrieve(self, query: EngineQuery) -> list[RetrievedHit]: ...


@runtime_checkable
class CreationSettingsCheck(Protocol):
    """An engine that checks a KB's creation settings itself (the bridges: where ``base_url``
    may point) before the KB is stored and before ``on_knowledge_base_create`` runs."""

    async def check_creation_settings(self, settings: Mapping[str, Any]) -> None: ...


def describe(engine: EngineDescription) -> dict[str, Any]:
    """``GET /engines``: an engine and its schemas."""
    return {
        "name": engine.name,
        "description": engine.description,
        "capabilities": list(engine.capabilities),
        "creation_schema": [item.to_dict() for item in engine.creation_schema],
        "retrieval_schema": [item.to_dict() for item in engine.retrieval_schema],
    }
