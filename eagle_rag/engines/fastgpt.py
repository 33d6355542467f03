"""Bridge to a FastGPT dataset, through FastGPT's OpenAPI.

- retrieve: ``POST /api/core/dataset/searchTest`` → ``data.list[]`` (``q``/``a`` text and a
  ``score`` list per match);
- ingest: ``POST /api/core/dataset/collection/create/localFile`` (multipart ``file`` and a
  ``data`` JSON) → ``data.collectionId``; FastGPT parses and trains it;
- delete: ``DELETE /api/core/dataset/collection/delete?id=...``.

FastGPT answers ``{"code": 200, "data": ...}``; any other code is an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from eagle_rag.engines.base import (
    DOC_INGESTION,
    DOC_PARSING,
    EngineDocument,
    EngineIngestResult,
    EngineQuery,
)
from eagle_rag.engines.http_bridge import BridgeClient, setting
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.errors import UpstreamError
from eagle_rag.plugins.payloads import RetrievedHit

COLLECTION = "fastgpt"


class FastgptEngine:
    name = "fastgpt"
    description = "A FastGPT dataset, searched and fed through FastGPT's OpenAPI."
    capabilities = (DOC_INGESTION, DOC_PARSING)
    creation_schema = (
        SchemaItem(
            "base_url",
            "string",
            {"en_US": "FastGPT base URL", "zh_Hans": "FastGPT 地址"},
            required=True,
        ),
        SchemaItem("api_key", "secret", {"en_US": "API key", "zh_Hans": "API 密钥"}, required=True),
        SchemaItem(
            "dataset_id", "string", {"en_US": "Dataset id", "zh_Hans": "知识库 ID"}, required=True
        ),
    )
    retrieval_schema = (
        SchemaItem(
            "search_mode",
            "select",
            {"en_US": "Search mode"},
            default="mixedRecall",
            options=("embedding", "fullTextRecall", "mixedRecall"),
        ),
        SchemaItem(
            "similarity",
            "float",
            {"en_US": "Minimum similarity"},
            default=0.0,
            minimum=0.0,
            maximum=1.0,
        ),
    )

    def __init__(
        self, *, timeout_s: float = 30.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._timeout = timeout_s
        self._transport = transport

    def _client(self, settings: Mapping[str, Any]) -> BridgeClient:
        return BridgeClient(
            "FastGPT",
            setting(settings, "base_url"),
            setting(settings, "api_key"),
            timeout_s=self._timeout,
            transport=self._transport,
        )

    async def _call(self, settings: Mapping[str, Any], method: str, path: str, **kw: Any) -> Any:
        client = self._client(settings)
        body = await client.call(method, path, **kw)
        if not isinstance(body, dict) or "code" not in body:
            raise client.malformed("no code in the answer")
        if body["code"] != 200:
            raise UpstreamError(
                f"FastGPT refused the request ({body['code']}): "
                f"{body.get('message') or body.get('statusText', '')}",
                service="FastGPT",
            )
        return body.get("data")

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        await self._search(settings, "ping", {})

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """The FastGPT dataset belongs to its owner: it is left as it is."""

    async def ingest(self, document: EngineDocument) -> EngineIngestResult:
        settings = document.creation_settings
        options = {"datasetId": setting(settings, "dataset_id"), "trainingType": "chunk"}
        data = await self._call(
            settings,
            "POST",
            "/api/core/dataset/collection/create/localFile",
            data={"data": json.dumps(options)},
            files={"file": (document.filename, document.data, document.mime_type)},
        )
        try:
            remote_id = str(data["collectionId"])
        except (KeyError, TypeError) as exc:
            raise self._client(settings).malformed(exc) from exc
        return EngineIngestResult(chunks=0, remote_id=remote_id)

    async def delete_document(
        self, kb_name: str, remote_id: str, settings: Mapping[str, Any]
    ) -> bool:
        await self._call(
            settings, "DELETE", "/api/core/dataset/collection/delete", params={"id": remote_id}
        )
        return True

    async def retrieve(self, query: EngineQuery) -> list[RetrievedHit]:
        matches = await self._search(query.creation_settings, query.text, query.retrieval_settings)
        hits = []
        try:
            for match in matches[: query.top_k]:
                text = "\n".join(part for part in (match.get("q"), match.get("a")) if part)
                score = max((float(s["value"]) for s in match.get("score") or []), default=0.0)
                hits.append(
                    RetrievedHit(
                        chunk_id=f"fastgpt:{match['id']}",
                        collection=COLLECTION,
                        document_id=str(match.get("collectionId", "")),
                        kb_name=query.kb_name,
                        text=text,
                        path=str(match.get("sourceName") or ""),
                        score=score,
                        scores={"fastgpt": score},
                        source_chunk_id=f"fastgpt:{match['id']}",
                        metadata={
                            "type": "text",
                            "engine": "fastgpt",
                            "filename": match.get("sourceName", ""),
                        },
                    )
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self._client(query.creation_settings).malformed(exc) from exc
        return hits

    async def _search(
        self, settings: Mapping[str, Any], text: str, options: Mapping[str, Any]
    ) -> list[Any]:
        data = await self._call(
            settings,
            "POST",
            "/api/core/dataset/searchTest",
            json={
                "datasetId": setting(settings, "dataset_id"),
                "text": text,
                "limit": 5000,
                "similarity": options.get("similarity", 0.0),
                "searchMode": options.get("search_mode", "mixedRecall"),
                "usingReRank": False,
            },
        )
        matches = data.get("list") if isinstance(data, dict) else data
        if not isinstance(matches, list):
            raise self._client(settings).malformed("data.list is not a list")
        return matches
