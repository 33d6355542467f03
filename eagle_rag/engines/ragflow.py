"""Bridge to a RAGFlow dataset, through RAGFlow's HTTP API.

- retrieve: ``POST /api/v1/retrieval`` → ``data.chunks[]`` with a ``similarity``;
- ingest: ``POST /api/v1/datasets/{id}/documents`` (multipart upload), then
  ``POST /api/v1/datasets/{id}/chunks`` to start parsing (RAGFlow parses asynchronously);
- delete: ``DELETE /api/v1/datasets/{id}/documents`` with ``{"ids": [...]}``.

RAGFlow reports errors in the body (``{"code": 102, "message": ...}``, often with HTTP 200),
so every answer's ``code`` is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagle_rag.engines.base import (
    DOC_INGESTION,
    DOC_PARSING,
    EngineDocument,
    EngineIngestResult,
    EngineQuery,
)
from eagle_rag.engines.http_bridge import BridgeEngine, connection_schema, path_segment, setting
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.plugins.payloads import RetrievedHit


class RagflowEngine(BridgeEngine):
    service = "RAGFlow"
    ok_code = 0
    name = "ragflow"
    description = "A RAGFlow dataset, searched and fed through RAGFlow's HTTP API."
    capabilities = (DOC_INGESTION, DOC_PARSING)
    creation_schema = connection_schema("RAGFlow", None)
    retrieval_schema = (
        SchemaItem(
            "similarity_threshold",
            "float",
            {"en_US": "Similarity threshold"},
            default=0.2,
            minimum=0.0,
            maximum=1.0,
        ),
        SchemaItem(
            "vector_similarity_weight",
            "float",
            {"en_US": "Vector similarity weight"},
            default=0.3,
            minimum=0.0,
            maximum=1.0,
        ),
    )

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        await self._retrieve(settings, "ping", 1, {})

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """The RAGFlow dataset belongs to its owner: it is left as it is."""

    async def ingest(self, document: EngineDocument) -> EngineIngestResult:
        settings = document.creation_settings
        dataset = _dataset(settings)
        body = await self._call(
            settings,
            "POST",
            dataset + "/documents",
            files={"file": (document.filename, document.data, document.mime_type)},
        )
        try:
            remote_id = str(body["data"][0]["id"])
        except (KeyError, IndexError, TypeError) as exc:
            raise self._malformed(settings, exc) from exc
        await self._call(settings, "POST", dataset + "/chunks", json={"document_ids": [remote_id]})
        return EngineIngestResult(chunks=0, remote_id=remote_id)

    async def delete_document(
        self, kb_name: str, remote_id: str, settings: Mapping[str, Any]
    ) -> bool:
        dataset = _dataset(settings)
        await self._call(settings, "DELETE", dataset + "/documents", json={"ids": [remote_id]})
        return True

    async def retrieve(self, query: EngineQuery) -> list[RetrievedHit]:
        chunks = await self._retrieve(
            query.creation_settings, query.text, query.top_k, query.retrieval_settings
        )
        try:
            return [
                self._hit(
                    query.kb_name,
                    chunk["id"],
                    document_id=chunk.get("document_id"),
                    text=str(chunk["content"]),
                    filename=str(chunk.get("document_keyword") or ""),
                    score=float(chunk.get("similarity") or 0.0),
                )
                for chunk in chunks
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise self._malformed(query.creation_settings, exc) from exc

    async def _retrieve(
        self, settings: Mapping[str, Any], text: str, top_k: int, options: Mapping[str, Any]
    ) -> list[Any]:
        body = await self._call(
            settings,
            "POST",
            "/api/v1/retrieval",
            json={
                "question": text,
                "dataset_ids": [setting(settings, "dataset_id")],
                "page": 1,
                "page_size": top_k,
                "similarity_threshold": options.get("similarity_threshold", 0.2),
                "vector_similarity_weight": options.get("vector_similarity_weight", 0.3),
            },
        )
        try:
            chunks = body["data"]["chunks"]
        except (KeyError, TypeError) as exc:
            raise self._malformed(settings, exc) from exc
        if not isinstance(chunks, list):
            raise self._malformed(settings, "data.chunks is not a list")
        return chunks


def _dataset(settings: Mapping[str, Any]) -> str:
    return f"/api/v1/datasets/{path_segment(setting(settings, 'dataset_id'))}"
