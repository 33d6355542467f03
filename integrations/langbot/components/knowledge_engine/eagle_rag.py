"""A LangBot KnowledgeEngine that keeps its knowledge in an Eagle-RAG server, over REST.

- ``retrieve``: ``POST /search`` on the KB's Eagle-RAG knowledge base; each text source becomes a
  ``RetrievalResultEntry`` whose metadata carries the source's path, pages, file and document.
- ``ingest``: the file the host stored is uploaded to ``POST /ingest``; the engine waits for the
  task and reports the chunks it produced (or the reason it failed).
- ``delete_document``: the Eagle-RAG document created for that LangBot document is deleted.
  LangBot passes only the ids there, so the engine remembers each KB's settings from the calls
  that carry them (create, ingest, retrieve); after a restart it falls back to the plugin's
  own config (``eagle_url``, ``api_key``) and finds the document by the ids it was tagged with.

The score is the reranker's when one ran, else the dense cosine, else 1/rank (fused RRF values
are tiny and only order-meaningful); ``distance`` is ``1 - score``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
from langbot_plugin.api.definition.components.knowledge_engine.engine import (
    KnowledgeEngine,
    KnowledgeEngineCapability,
)
from langbot_plugin.api.entities.builtin.provider.message import ContentElement
from langbot_plugin.api.entities.builtin.rag.context import (
    RetrievalContext,
    RetrievalResponse,
    RetrievalResultEntry,
)
from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus
from langbot_plugin.api.entities.builtin.rag.models import IngestionContext, IngestionResult

TASK_TIMEOUT_S = 900.0
POLL_S = 0.5
LANGBOT_ID = "langbot_document_id"
LANGBOT_KB = "langbot_kb_id"


class EagleRagError(RuntimeError):
    """Eagle-RAG refused a call or could not be reached; the message says which and why."""


class EagleRagEngine(KnowledgeEngine):
    def __init__(self) -> None:
        super().__init__()
        self._settings: dict[str, dict[str, Any]] = {}  # LangBot kb id -> creation settings

    @classmethod
    def get_capabilities(cls) -> list[str]:
        # Eagle-RAG parses files itself (PDF, Office, Markdown, HTML...).
        return [KnowledgeEngineCapability.DOC_INGESTION, KnowledgeEngineCapability.DOC_PARSING]

    async def on_knowledge_base_create(self, kb_id: str, config: dict[str, Any]) -> None:
        """Use the named Eagle-RAG KB, creating it when it does not exist yet."""
        kb_name = _kb_name(config)
        self._settings[kb_id] = dict(config)
        async with _client(config) as client:
            found = await client.get(f"/knowledge_bases/{kb_name}")
            if found.status_code == 404:
                created = await client.post(
                    "/knowledge_bases",
                    json={"kb_name": kb_name, "description": f"LangBot knowledge base {kb_id}"},
                )
                _check(created)
            else:
                _check(found)

    async def on_knowledge_base_delete(self, kb_id: str) -> None:
        """The Eagle-RAG KB may serve other agents too: it is kept."""

    async def ingest(self, context: IngestionContext) -> IngestionResult:
        config = context.creation_settings
        self._settings[context.knowledge_base_id] = dict(config)
        meta = context.file_object.metadata
        try:
            data = await self.plugin.get_knowledge_file_stream(context.file_object.storage_path)
            async with _client(config) as client:
                submitted = await client.post(
                    "/ingest",
                    data={
                        "kb_name": _kb_name(config),
                        "metadata": _json(
                            {LANGBOT_ID: meta.document_id, LANGBOT_KB: context.knowledge_base_id}
                        ),
                    },
                    files={"file": (meta.filename, data, meta.mime_type)},
                )
                job = _check(submitted)
                task = await _wait(client, job["job_id"])
                if task["status"] != "completed":
                    return IngestionResult(
                        document_id=meta.document_id,
                        status=DocumentStatus.FAILED,
                        error_message=task.get("error") or "the Eagle-RAG task failed",
                    )
                document = _check(await client.get(f"/documents/{job['document_id']}"))
        except (EagleRagError, httpx.HTTPError) as exc:
            return IngestionResult(
                document_id=meta.document_id, status=DocumentStatus.FAILED, error_message=str(exc)
            )
        return IngestionResult(
            document_id=meta.document_id,
            status=DocumentStatus.COMPLETED,
            chunks_created=int(document["chunk_count"]),
            metadata={"eagle_document_id": document["document_id"]},
        )

    async def delete_document(self, kb_id: str, document_id: str) -> bool:
        """Delete the Eagle-RAG document made from this LangBot document (False: none found)."""
        config = self._settings.get(kb_id) or dict(self.get_plugin_config() or {})
        return await delete_in(config, kb_id, document_id)

    async def retrieve(self, context: RetrievalContext) -> RetrievalResponse:
        config = context.creation_settings
        if context.knowledge_base_id:
            self._settings[context.knowledge_base_id] = dict(config)
        options = context.retrieval_settings
        top_k = int(options.get("top_k", 5))
        threshold = float(options.get("score_threshold", 0.0))
        body = {"query": context.query, "kb_name": _kb_name(config), "top_k": top_k}
        if context.filters:
            body["filters"] = context.filters
        async with _client(config) as client:
            found = _check(await client.post("/search", json=body))
        results = []
        for source in found["sources"]["text"]:
            score = _score(source)
            if score < threshold:
                continue
            results.append(
                RetrievalResultEntry(
                    id=source["chunk_id"],
                    content=[ContentElement.from_text(source["content"])],
                    metadata={
                        "path": source["path"],
                        "page_nums": source["page_nums"],
                        "filename": source["filename"],
                        "document_id": source["document_id"],
                        "kb_name": source["kb_name"],
                        "citation": source["index"],
                        "type": source["type"],
                    },
                    distance=1.0 - score,
                    score=score,
                )
            )
        return RetrievalResponse(
            results=results,
            total_found=len(found["sources"]["text"]),
            metadata={"route": found.get("route"), "steps": found.get("steps", [])},
        )


async def delete_in(config: dict[str, Any], kb_id: str, langbot_document_id: str) -> bool:
    """Find the Eagle-RAG document tagged with these LangBot ids, and delete it."""
    params: dict[str, Any] = {"limit": 500}
    if config.get("kb_name"):
        params["kb_name"] = config["kb_name"]
    async with _client(config) as client:
        offset = 0
        while True:
            listed = _check(await client.get("/documents", params={**params, "offset": offset}))
            for document in listed:
                tags = document.get("metadata", {})
                if tags.get(LANGBOT_ID) == langbot_document_id and tags.get(LANGBOT_KB) == kb_id:
                    _check(await client.delete(f"/documents/{document['document_id']}"))
                    return True
            if len(listed) < params["limit"]:
                return False
            offset += len(listed)


def _score(source: dict[str, Any]) -> float:
    scores = source.get("scores") or {}
    if "rerank" in scores:
        return float(scores["rerank"])
    if "dense" in scores:
        return max(0.0, min(1.0, float(scores["dense"])))
    return 1.0 / float(source["index"])


def _kb_name(config: dict[str, Any]) -> str:
    name = str(config.get("kb_name") or "").strip()
    if not name:
        raise EagleRagError("the knowledge base has no Eagle-RAG kb_name configured")
    return name


def _client(config: dict[str, Any]) -> httpx.AsyncClient:
    url = str(config.get("eagle_url") or "").rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise EagleRagError(f"eagle_url must be an http(s) URL, not {url!r}")
    key = str(config.get("api_key") or "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(base_url=url, headers=headers, timeout=60)


def _check(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            error = response.json()
            reason = f"{error.get('code')}: {error.get('message')}"
        except ValueError:
            reason = response.text[:300]
        raise EagleRagError(f"Eagle-RAG answered {response.status_code} ({reason})")
    return response.json()


async def _wait(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + TASK_TIMEOUT_S
    while time.monotonic() < deadline:
        task: dict[str, Any] = _check(await client.get(f"/tasks/{job_id}"))
        if task["status"] in ("completed", "failed"):
            return task
        await asyncio.sleep(POLL_S)
    raise EagleRagError(f"the Eagle-RAG task {job_id} did not finish in {TASK_TIMEOUT_S:g} s")


def _json(value: Any) -> str:
    return json.dumps(value)
