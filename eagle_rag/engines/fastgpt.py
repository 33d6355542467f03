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

from eagle_rag.engines.base import (
    DOC_INGESTION,
    DOC_PARSING,
    EngineDocument,
    EngineIngestResult,
    EngineQuery,
)
from eagle_rag.engines.http_bridge import BridgeEngine, connection_schema, setting
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.plugins.payloads import RetrievedHit

# FastGPT's score types that are a similarity in [0, 1], the most telling first. ``fullText`` is
# a BM25-like text score with no upper bound (7.5 is ordinary) and ``rrf`` a fused rank value
# (≈0.03): neither is a relevance, so neither is read as one.
SIMILARITY_TYPES = ("reRank", "embedding")


def similarity(scores: Mapping[str, float]) -> float:
    """A FastGPT match's relevance in [0, 1]: its rerank score, else its embedding similarity;
    0.0 for a match found by full text alone (its rank still counts in the fusion)."""
    for kind in SIMILARITY_TYPES:
        if kind in scores:
            return scores[kind]
    return 0.0


class FastgptEngine(BridgeEngine):
    service = "FastGPT"
    ok_code = 200
    name = "fastgpt"
    description = "A FastGPT dataset, searched and fed through FastGPT's OpenAPI."
    capabilities = (DOC_INGESTION, DOC_PARSING)
    creation_schema = connection_schema("FastGPT", None)
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

    async def _data(self, settings: Mapping[str, Any], method: str, path: str, **kw: Any) -> Any:
        """FastGPT wraps every answer: ``{"code": 200, "data": ...}``."""
        return (await self._call(settings, method, path, **kw)).get("data")

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        await self._search(settings, "ping", {})

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """The FastGPT dataset belongs to its owner: it is left as it is."""

    async def ingest(self, document: EngineDocument) -> EngineIngestResult:
        settings = document.creation_settings
        options = {"datasetId": setting(settings, "dataset_id"), "trainingType": "chunk"}
        data = await self._data(
            settings,
            "POST",
            "/api/core/dataset/collection/create/localFile",
            data={"data": json.dumps(options)},
            files={"file": (document.filename, document.data, document.mime_type)},
        )
        try:
            remote_id = str(data["collectionId"])
        except (KeyError, TypeError) as exc:
            raise self._malformed(settings, exc) from exc
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
                scores = {str(s["type"]): float(s["value"]) for s in match.get("score") or []}
                hits.append(
                    self._hit(
                        query.kb_name,
                        match["id"],
                        document_id=match.get("collectionId"),
                        text=text,
                        filename=str(match.get("sourceName") or ""),
                        score=similarity(scores),
                        fastgpt_scores=scores,
                    )
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self._malformed(query.creation_settings, exc) from exc
        return hits

    async def _search(
        self, settings: Mapping[str, Any], text: str, options: Mapping[str, Any]
    ) -> list[Any]:
        data = await self._data(
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
            raise self._malformed(settings, "data.list is not a list")
        return matches
