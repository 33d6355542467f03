"""A LangBot KnowledgeEngine that keeps its knowledge in an Eagle-RAG server.

Every call goes through ``eagle_rag.client`` (the package ships a copy of it, see README):

- ``retrieve``: a search on the KB's Eagle-RAG knowledge base; each text source becomes a
  ``RetrievalResultEntry`` whose metadata carries the source's path, pages, file and document.
  The score is Eagle-RAG's relevance in [0, 1] (the same number Dify and the UI see);
  ``distance`` is ``1 - score``; ``score_threshold`` drops entries below it.
- ``ingest``: the file the host stored is uploaded under the user's original file name (when the
  host passes one; LangBot 4.11 sends its storage key as ``filename``); the engine follows the
  task and reports the chunks it produced (or the reason it failed).
- ``delete_document``: the Eagle-RAG document created for that LangBot document is deleted.
  LangBot passes only the ids there, so the engine remembers each KB's settings from the calls
  that carry them (create, ingest, retrieve); after a restart it falls back to the plugin's
  own config (``eagle_url``, ``api_key``) and finds the document by the ids it was tagged with.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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
from langbot_plugin.api.entities.builtin.rag.models import (
    FileMetadata,
    IngestionContext,
    IngestionResult,
)

try:
    from eagle_rag.client import AsyncEagleClient, TextSource
    from eagle_rag.errors import EagleError, NotFoundError
except ImportError:  # the built .lbpkg carries eagle_rag/ (client and errors) at its root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from eagle_rag.client import AsyncEagleClient, TextSource
    from eagle_rag.errors import EagleError, NotFoundError

TASK_TIMEOUT_S = 900.0
PAGE = 500
LANGBOT_ID = "langbot_document_id"
LANGBOT_KB = "langbot_kb_id"
LANGBOT_KEY = "langbot_storage_key"
# Where a host may put the name the user uploaded the file under, most specific first.
ORIGINAL_NAME_KEYS = ("original_filename", "original_name", "display_name", "file_name", "name")


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
            try:
                await client.get_knowledge_base(kb_name)
            except NotFoundError:
                await client.create_knowledge_base(
                    kb_name, description=f"LangBot knowledge base {kb_id}"
                )
            except EagleError as exc:
                raise _error(exc) from exc

    async def on_knowledge_base_delete(self, kb_id: str) -> None:
        """The Eagle-RAG KB may serve other agents too: it is kept."""

    async def ingest(self, context: IngestionContext) -> IngestionResult:
        config = context.creation_settings
        self._settings[context.knowledge_base_id] = dict(config)
        meta = context.file_object.metadata
        tags = {LANGBOT_ID: meta.document_id, LANGBOT_KB: context.knowledge_base_id}
        name = original_name(meta)
        if name != meta.filename:
            tags[LANGBOT_KEY] = meta.filename
        try:
            data = await self.plugin.get_knowledge_file_stream(context.file_object.storage_path)
            async with _client(config) as client:
                job = await client.ingest(
                    _kb_name(config), data, filename=name, mime_type=meta.mime_type, metadata=tags
                )
                task = await client.wait_for_task(job.job_id, timeout_s=TASK_TIMEOUT_S)
                if task.status != "completed":
                    return _failed(meta, task.error or "the Eagle-RAG task failed")
                document = await client.get_document(job.document_id)
        except (EagleError, EagleRagError) as exc:
            return _failed(meta, exc.message if isinstance(exc, EagleError) else str(exc))
        return IngestionResult(
            document_id=meta.document_id,
            status=DocumentStatus.COMPLETED,
            chunks_created=document.chunk_count,
            metadata={"eagle_document_id": document.document_id, "filename": document.filename},
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
        async with _client(config) as client:
            try:
                found = await client.search(
                    context.query, _kb_name(config), top_k=top_k, filters=context.filters or None
                )
            except EagleError as exc:
                raise _error(exc) from exc
        texts = found.sources.text
        return RetrievalResponse(
            results=[_entry(s) for s in texts if s.score >= threshold],
            total_found=len(texts),
            metadata={"route": dict(found.route), "steps": [dict(s) for s in found.steps]},
        )


def original_name(meta: FileMetadata) -> str:
    """The name the user uploaded the file under, when the host passes one; else ``filename``."""
    for key in ORIGINAL_NAME_KEYS:
        value = meta.extra.get(key)
        if isinstance(value, str) and value.strip():
            return Path(value.strip().replace("\\", "/")).name
    return meta.filename


async def delete_in(config: dict[str, Any], kb_id: str, langbot_document_id: str) -> bool:
    """Find the Eagle-RAG document tagged with these LangBot ids, and delete it."""
    kb_name = str(config.get("kb_name") or "") or None
    async with _client(config) as client:
        try:
            offset = 0
            while True:
                listed = await client.list_documents(kb_name, limit=PAGE, offset=offset)
                for document in listed:
                    tags = document.metadata
                    if (
                        tags.get(LANGBOT_ID) == langbot_document_id
                        and tags.get(LANGBOT_KB) == kb_id
                    ):
                        return await client.delete_document(document.document_id)
                if len(listed) < PAGE:
                    return False
                offset += len(listed)
        except EagleError as exc:
            raise _error(exc) from exc


def _entry(source: TextSource) -> RetrievalResultEntry:
    return RetrievalResultEntry(
        id=source.chunk_id,
        content=[ContentElement.from_text(source.content)],
        metadata={
            "path": source.path,
            "page_nums": list(source.page_nums),
            "filename": source.filename,
            "document_id": source.document_id,
            "kb_name": source.kb_name,
            "citation": source.index,
            "type": source.type,
        },
        distance=1.0 - source.score,
        score=source.score,
    )


def _failed(meta: FileMetadata, reason: str) -> IngestionResult:
    return IngestionResult(
        document_id=meta.document_id, status=DocumentStatus.FAILED, error_message=reason
    )


def _kb_name(config: dict[str, Any]) -> str:
    name = str(config.get("kb_name") or "").strip()
    if not name:
        raise EagleRagError("the knowledge base has no Eagle-RAG kb_name configured")
    return name


def _client(config: dict[str, Any]) -> AsyncEagleClient:
    url = str(config.get("eagle_url") or "").rstrip("/")
    try:
        return AsyncEagleClient(url, api_key=str(config.get("api_key") or "") or None)
    except EagleError as exc:
        raise EagleRagError(f"eagle_url must be an http(s) URL, not {url!r}") from exc


def _error(exc: EagleError) -> EagleRagError:
    status = exc.fields.get("status")
    code = exc.fields.get("remote_code") or exc.code
    where = f"answered {status}" if status else "failed"
    return EagleRagError(f"Eagle-RAG {where} ({code}: {exc.message})")
