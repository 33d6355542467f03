"""Bridge to a Dify knowledge base (dataset), through Dify's Knowledge API.

- retrieve: ``POST /v1/datasets/{dataset_id}/retrieve`` → ``records[].segment`` with a score;
- ingest: ``POST /v1/datasets/{dataset_id}/document/create-by-file`` (multipart ``file`` and a
  ``data`` JSON of indexing options) → ``document.id``; Dify parses the file itself;
- delete: ``DELETE /v1/datasets/{dataset_id}/documents/{document_id}``.
"""

from __future__ import annotations

import json
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


class DifyEngine(BridgeEngine):
    service = "Dify"
    ok_code = None
    name = "dify"
    description = "A Dify knowledge base (dataset), searched and fed through Dify's Knowledge API."
    capabilities = (DOC_INGESTION, DOC_PARSING)
    creation_schema = connection_schema("Dify", "https://api.dify.ai")
    retrieval_schema = (
        SchemaItem(
            "search_method",
            "select",
            {"en_US": "Search method"},
            default="hybrid_search",
            options=("semantic_search", "full_text_search", "hybrid_search", "keyword_search"),
        ),
        SchemaItem(
            "score_threshold",
            "float",
            {"en_US": "Score threshold"},
            default=0.0,
            minimum=0.0,
            maximum=1.0,
        ),
    )

    def _dataset(self, settings: Mapping[str, Any]) -> str:
        return f"/v1/datasets/{path_segment(setting(settings, 'dataset_id'))}"

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """Refuse a KB whose dataset or key does not work: one cheap retrieval."""
        await self._call(
            settings,
            "POST",
            self._dataset(settings) + "/retrieve",
            json={"query": "ping", "retrieval_model": retrieval_model({}, top_k=1)},
        )

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """The Dify dataset belongs to its owner: it is left as it is."""

    async def ingest(self, document: EngineDocument) -> EngineIngestResult:
        settings = document.creation_settings
        options = {"indexing_technique": "high_quality", "process_rule": {"mode": "automatic"}}
        body = await self._call(
            settings,
            "POST",
            self._dataset(settings) + "/document/create-by-file",
            data={"data": json.dumps(options)},
            files={"file": (document.filename, document.data, document.mime_type)},
        )
        try:
            remote_id = str(body["document"]["id"])
        except (KeyError, TypeError) as exc:
            raise self._malformed(settings, exc) from exc
        return EngineIngestResult(
            chunks=0, remote_id=remote_id, metadata={"batch": body.get("batch")}
        )

    async def delete_document(
        self, kb_name: str, remote_id: str, settings: Mapping[str, Any]
    ) -> bool:
        await self._call(
            settings, "DELETE", f"{self._dataset(settings)}/documents/{path_segment(remote_id)}"
        )
        return True

    async def retrieve(self, query: EngineQuery) -> list[RetrievedHit]:
        settings = query.creation_settings
        model = retrieval_model(query.retrieval_settings, top_k=query.top_k)
        body = await self._call(
            settings,
            "POST",
            self._dataset(settings) + "/retrieve",
            json={"query": query.text, "retrieval_model": model},
        )
        try:
            records = body["records"]
            hits = []
            for record in records:
                segment = record["segment"]
                document = segment.get("document") or {}
                score = float(record.get("score") or 0.0)
                hits.append(
                    self._hit(
                        query.kb_name,
                        segment["id"],
                        document_id=segment.get("document_id") or document.get("id"),
                        text=str(segment["content"]),
                        filename=str(document.get("name") or ""),
                        score=score,
                        position=segment.get("position"),
                    )
                )
        except (KeyError, TypeError, ValueError) as exc:
            raise self._malformed(settings, exc) from exc
        return hits


def retrieval_model(options: Mapping[str, Any], *, top_k: int) -> dict[str, Any]:
    """Dify's ``retrieval_model`` with every field its RetrievalModel requires (search_method,
    reranking_enable, top_k, score_threshold_enabled): Dify refuses a partial one with a 400,
    and its hit testing reads them by key."""
    threshold = float(options.get("score_threshold", 0.0))
    return {
        "search_method": options.get("search_method", "hybrid_search"),
        "reranking_enable": False,
        "top_k": top_k,
        "score_threshold_enabled": threshold > 0,
        "score_threshold": threshold,
    }
