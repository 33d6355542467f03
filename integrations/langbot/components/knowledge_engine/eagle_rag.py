"""A LangBot KnowledgeEngine that keeps its knowledge in an Eagle-RAG server.

Every call goes through ``eagle_rag.client`` (the package ships a copy of it, see README):

- ``retrieve``: a search on the KB's Eagle-RAG knowledge base; each text source becomes a
  ``RetrievalResultEntry`` whose metadata carries the source's path, pages, file and document.
  The score is Eagle-RAG's relevance in [0, 1] (the same number Dify and the UI see);
  ``distance`` is ``1 - score``; ``score_threshold`` drops entries below it.
- ``ingest``: the file the host stored is uploaded under the user's original file name (when the
  host passes one; LangBot 4.11 sends its storage key as ``filename``); the engine follows the
  task and reports the chunks it produced (or the reason it failed).
- Two LangBot documents with the same bytes share one Eagle-RAG document (Eagle-RAG keeps one
  document per file content and KB): the second ingest is reported with ``dedup_hit`` and the
  document it shares, and the sharing is kept in the host's plugin storage (``eagle-share/...``
  keys), so the shared document is deleted only when the last LangBot document that holds it is.
- ``delete_document``: the Eagle-RAG document created for that LangBot document is deleted.
  LangBot passes only the ids there, so the engine remembers each KB's settings from the calls
  that carry them (create, ingest, retrieve); after a restart it falls back to the plugin's
  own config (``eagle_url``, ``api_key``) and finds the document by the ids it was tagged with.
- ``retrieve`` filters: LangBot's file filter (``file_id``/``document_id``: an id, a list,
  ``{"$eq": id}`` or ``{"$in": [ids]}``) becomes the Eagle-RAG documents made from those files;
  Eagle-RAG's own filter keys pass as they are; any other key is dropped, with a warning in the
  response's ``metadata["warnings"]`` and the log, rather than failing the whole retrieval.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

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
SHARE = "eagle-share"  # plugin storage: eagle-share/<eagle doc>/<LangBot kb>/<LangBot doc>
# LangBot's names for a file in a retrieval filter.
ID_FILTERS = ("file_id", "document_id", LANGBOT_ID)
logger = logging.getLogger(__name__)
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
            owner = document.metadata.get(LANGBOT_ID)
            shared = job.dedup_hit and (owner, document.metadata.get(LANGBOT_KB)) != (
                meta.document_id,
                context.knowledge_base_id,
            )
            if shared:
                await self._share(document, context.knowledge_base_id, meta.document_id)
        except (EagleError, EagleRagError) as exc:
            return _failed(meta, exc.message if isinstance(exc, EagleError) else str(exc))
        found = {"eagle_document_id": document.document_id, "filename": document.filename}
        if shared:  # the same bytes are already there: this file holds that document too
            found.update(dedup_hit=True, shared_with=owner)
        return IngestionResult(
            document_id=meta.document_id,
            status=DocumentStatus.COMPLETED,
            chunks_created=document.chunk_count,
            metadata=found,
        )

    async def _share(self, document: Any, kb_id: str, langbot_document_id: str) -> None:
        """Record that this LangBot document holds ``document`` too; its maker (from the tags)
        becomes a holder when the first share is recorded, so deleting it keeps the document."""
        shares = Shares(self.plugin)
        eagle_id = document.document_id
        held = await shares.all()
        owner = (document.metadata.get(LANGBOT_KB), document.metadata.get(LANGBOT_ID))
        if owner[1] and not any(e == eagle_id for e, _, _ in held):
            await shares.add(eagle_id, str(owner[0] or ""), str(owner[1]))
        await shares.add(eagle_id, kb_id, langbot_document_id)

    async def delete_document(self, kb_id: str, document_id: str) -> bool:
        """Delete the Eagle-RAG document made from this LangBot document (False: none found);
        one that other LangBot documents still hold (same bytes) is kept for them."""
        config = self._settings.get(kb_id) or dict(self.get_plugin_config() or {})
        shares = Shares(self.plugin)
        held = await shares.all()
        mine = [e for e, k, d in held if (k, d) == (kb_id, document_id)]
        if not mine:
            return await delete_in(config, kb_id, document_id, {e for e, _, _ in held})
        eagle_id = mine[0]
        await shares.remove(eagle_id, kb_id, document_id)
        others = [d for e, k, d in held if e == eagle_id and (k, d) != (kb_id, document_id)]
        if others:
            return True  # this LangBot document is gone; the content stays for the others
        return await delete_last(config, eagle_id)

    async def retrieve(self, context: RetrievalContext) -> RetrievalResponse:
        config = context.creation_settings
        kb_id = context.knowledge_base_id or ""
        if kb_id:
            self._settings[kb_id] = dict(config)
        options = context.retrieval_settings
        top_k = int(options.get("top_k", 5))
        threshold = float(options.get("score_threshold", 0.0))
        files, filters, warnings = split_filters(context.filters or {})
        for warning in warnings:
            logger.warning("Eagle-RAG retrieval for LangBot KB %s: %s", kb_id, warning)
        async with _client(config) as client:
            try:
                scope = None
                if files is not None:
                    scope = await self._eagle_ids(client, _kb_name(config), kb_id, files)
                    if not scope:  # none of those files has content in Eagle-RAG
                        return RetrievalResponse(
                            results=[], total_found=0, metadata={"warnings": warnings}
                        )
                found = await _search_dropping_unknown(
                    client,
                    context.query,
                    _kb_name(config),
                    top_k=top_k,
                    filters=filters,
                    document_ids=scope,
                    warnings=warnings,
                )
            except EagleError as exc:
                raise _error(exc) from exc
        texts = found.sources.text
        return RetrievalResponse(
            results=[_entry(s) for s in texts if s.score >= threshold],
            total_found=len(texts),
            metadata={
                "route": dict(found.route),
                "steps": [dict(s) for s in found.steps],
                "warnings": warnings,
            },
        )

    async def _eagle_ids(
        self, client: AsyncEagleClient, kb_name: str, kb_id: str, files: set[str]
    ) -> list[str]:
        """The Eagle-RAG documents these LangBot documents (of LangBot KB ``kb_id``) hold."""
        shares = await Shares(self.plugin).all()
        held = {d: e for e, k, d in shares if k == kb_id}
        shared = {e for e, _, _ in shares}  # a shared document's holders are those in storage
        made = {d: e for d, e in (await tagged(client, kb_name, kb_id)).items() if e not in shared}
        return sorted({held.get(f) or made[f] for f in files if f in held or f in made})


class Shares:
    """Which LangBot documents hold an Eagle-RAG document they share (same bytes), kept in the
    host's plugin storage as one key per holder, so it outlives a restart."""

    def __init__(self, host: Any) -> None:
        self._host = host

    async def all(self) -> list[tuple[str, str, str]]:
        """(Eagle document id, LangBot KB id, LangBot document id) for every holder."""
        keys = await self._call("get_plugin_storage_keys")
        held = []
        for key in keys:
            parts = str(key).split("/")
            if len(parts) == 4 and parts[0] == SHARE:
                held.append((unquote(parts[1]), unquote(parts[2]), unquote(parts[3])))
        return held

    async def add(self, eagle_id: str, kb_id: str, langbot_document_id: str) -> None:
        await self._call(
            "set_plugin_storage", _share_key(eagle_id, kb_id, langbot_document_id), b"1"
        )

    async def remove(self, eagle_id: str, kb_id: str, langbot_document_id: str) -> None:
        await self._call("delete_plugin_storage", _share_key(eagle_id, kb_id, langbot_document_id))

    async def _call(self, name: str, *args: Any) -> Any:
        try:
            return await getattr(self._host, name)(*args)
        except Exception as exc:  # the host's storage is the only record of a share
            raise EagleRagError(f"LangBot's plugin storage failed ({name}: {exc})") from exc


def _share_key(eagle_id: str, kb_id: str, langbot_document_id: str) -> str:
    parts = (eagle_id, kb_id, langbot_document_id)
    return "/".join([SHARE, *(quote(part, safe="") for part in parts)])


async def _search_dropping_unknown(
    client: AsyncEagleClient,
    query: str,
    kb_name: str,
    *,
    top_k: int,
    filters: dict[str, Any],
    document_ids: list[str] | None,
    warnings: list[str],
) -> Any:
    """The search; a filter key the server does not know (no plugin there declares it) is
    dropped with a warning and the search asked again, rather than fail the retrieval. What
    a server knows depends on its plugins (lakehouse-bi's ``upstream``), so it is asked."""
    remaining = dict(filters)
    while True:
        try:
            return await client.search(
                query, kb_name, top_k=top_k, filters=remaining or None, document_ids=document_ids
            )
        except EagleError as exc:
            details = exc.fields.get("details") or {}
            key = details.get("filter") if isinstance(details, Mapping) else None
            if exc.fields.get("remote_code") != "invalid_input" or key not in remaining:
                raise
            del remaining[key]
            warnings.append(f"filter {key!r} dropped: {exc.message}")
            logger.warning("Eagle-RAG retrieval: filter %r dropped: %s", key, exc.message)


def split_filters(filters: Mapping[str, Any]) -> tuple[set[str] | None, dict[str, Any], list[str]]:
    """LangBot's filters as (the LangBot document ids to keep, None: any; the filters passed
    on to Eagle-RAG, which drops with a warning those it does not know; a warning for each id
    filter that holds no id)."""
    files: set[str] | None = None
    eagle: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in filters.items():
        if key in ID_FILTERS:
            ids = _ids(value)
            if ids is None:
                warnings.append(f"filter {key!r} dropped: not an id, a list, $eq or $in")
            else:
                files = ids if files is None else files & ids
        else:
            eagle[key] = value
    return files, eagle, warnings


def _ids(value: Any) -> set[str] | None:
    if isinstance(value, Mapping) and len(value) == 1:
        ((operator, value),) = value.items()
        if operator not in ("$eq", "$in"):
            return None
    if isinstance(value, str):
        return {value}
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return set(value)
    return None


def original_name(meta: FileMetadata) -> str:
    """The name the user uploaded the file under, when the host passes one; else ``filename``."""
    for key in ORIGINAL_NAME_KEYS:
        value = meta.extra.get(key)
        if isinstance(value, str) and value.strip():
            return Path(value.strip().replace("\\", "/")).name
    return meta.filename


async def tagged(client: AsyncEagleClient, kb_name: str | None, kb_id: str) -> dict[str, str]:
    """LangBot document id → the Eagle-RAG document made from it, for LangBot KB ``kb_id``."""
    made: dict[str, str] = {}
    offset = 0
    while True:
        listed = await client.list_documents(kb_name, limit=PAGE, offset=offset)
        for document in listed:
            tags = document.metadata
            if tags.get(LANGBOT_KB) == kb_id and tags.get(LANGBOT_ID):
                made[str(tags[LANGBOT_ID])] = document.document_id
        if len(listed) < PAGE:
            return made
        offset += len(listed)


async def delete_last(config: dict[str, Any], eagle_id: str) -> bool:
    """The last LangBot holder of a shared document is gone: delete it, if LangBot made it (one
    another client uploaded, which a LangBot file happened to match, stays)."""
    async with _client(config) as client:
        try:
            document = await client.get_document(eagle_id)
            if not document.metadata.get(LANGBOT_ID):
                return True
            return await client.delete_document(eagle_id)
        except NotFoundError:
            return False
        except EagleError as exc:
            raise _error(exc) from exc


async def delete_in(
    config: dict[str, Any], kb_id: str, langbot_document_id: str, shared: set[str]
) -> bool:
    """Find the Eagle-RAG document tagged with these LangBot ids, and delete it, unless other
    LangBot documents hold it (``shared``: then this one was released from it already)."""
    kb_name = str(config.get("kb_name") or "") or None
    async with _client(config) as client:
        try:
            eagle_id = (await tagged(client, kb_name, kb_id)).get(langbot_document_id)
            if eagle_id is None or eagle_id in shared:
                return False
            return await client.delete_document(eagle_id)
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
