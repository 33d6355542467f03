"""Knowledge bases, ingest, tasks and documents."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, StreamingResponse
from sse_starlette import EventSourceResponse

from eagle_rag.api.deps import App, FormBody, Who
from eagle_rag.api.schemas import (
    ERRORS,
    DocumentOut,
    ErrorOut,
    KnowledgeBaseCreate,
    KnowledgeBaseOut,
    SubmissionOut,
    TaskOut,
    document_out,
    kb_out,
    task_out,
)
from eagle_rag.bootstrap import EagleApp
from eagle_rag.db.records import DocumentStatus, TaskRecord, TaskStatus
from eagle_rag.db.repositories.documents import MAX_PAGE
from eagle_rag.errors import EagleError, InvalidInputError, NotFoundError, error_body
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import between, eq
from eagle_rag.ingest import cancel
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.ingest.detect import text_charset

logger = logging.getLogger(__name__)

router = APIRouter(responses=ERRORS)
TERMINAL = ("completed", "failed")
POLL_S = 0.25
STREAM_OUTAGE_S = 10.0  # a stream whose task cannot be read this long ends with an error event
# Paging past any real catalog; bigger offsets overflow the databases' 64-bit integers.
MAX_OFFSET = 10_000_000


@router.get("/knowledge_bases", tags=["knowledge bases"])
async def list_knowledge_bases(
    app: App,
    who: Who,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = MAX_PAGE,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> list[KnowledgeBaseOut]:
    """The KBs this key may use, by name; a restricted key's pages are full pages of its KBs."""

    def load() -> list[dict[str, Any]]:
        repos = app.repositories
        kbs = repos.knowledge_bases.list(names=who.kb_names, limit=limit, offset=offset)
        return [
            kb_out(kb, repos.documents.count(kb_name=kb.name), app.knowledge.public(kb))
            for kb in kbs
        ]

    return [KnowledgeBaseOut(**kb) for kb in await asyncio.to_thread(load)]


@router.post(
    "/knowledge_bases",
    status_code=201,
    tags=["knowledge bases"],
    responses={409: {"model": ErrorOut, "description": "A KB of that name exists already"}},
)
async def create_knowledge_base(body: KnowledgeBaseCreate, app: App, who: Who) -> KnowledgeBaseOut:
    """Create a KB bound to an engine; its settings are checked against the engine's schemas
    (errors name the field), and the engine may refuse (a bridge checks its remote dataset)."""
    who.check_kb(body.kb_name)
    kb = await app.knowledge.create(
        body.kb_name,
        engine=body.engine,
        description=body.description,
        creation_settings=body.creation_settings,
        retrieval_settings=body.retrieval_settings,
    )
    return KnowledgeBaseOut(**kb_out(kb, 0, app.knowledge.public(kb)))


@router.get("/knowledge_bases/{kb_name}", tags=["knowledge bases"])
async def get_knowledge_base(kb_name: str, app: App, who: Who) -> KnowledgeBaseOut:
    who.check_kb(kb_name)
    kb = await asyncio.to_thread(app.repositories.knowledge_bases.get, kb_name)
    count = await asyncio.to_thread(app.repositories.documents.count, kb_name=kb_name)
    return KnowledgeBaseOut(**kb_out(kb, count, app.knowledge.public(kb)))


@router.delete("/knowledge_bases/{kb_name}", tags=["knowledge bases"])
async def delete_knowledge_base(kb_name: str, app: App, who: Who) -> dict[str, Any]:
    who.check_kb(kb_name)
    removed = await app.knowledge.delete(kb_name)
    return {"kb_name": kb_name, "deleted": True, "documents": removed}


@router.post("/knowledge_bases/{kb_name}/rebuild", status_code=202, tags=["knowledge bases"])
async def rebuild_knowledge_base(kb_name: str, app: App, who: Who) -> list[SubmissionOut]:
    """Run every document of the KB through the pipeline again (e.g. after a model change)."""
    who.check_kb(kb_name)
    submissions = await asyncio.to_thread(app.ingest.rebuild, kb_name)
    return [SubmissionOut(**s.to_dict()) for s in submissions]


# --- ingest and tasks -------------------------------------------------------------------------


@router.post(
    "/ingest",
    status_code=202,
    tags=["ingest"],
    response_model=SubmissionOut,
    responses={
        200: {"model": SubmissionOut, "description": "The same bytes are already in the KB"},
        413: {"model": ErrorOut, "description": "The file is over ingest.max_file_bytes"},
        415: {"model": ErrorOut, "description": "Not a form, or a file no parser reads"},
    },
)
async def ingest(
    request: Request,
    app: App,
    who: Who,
    form: FormBody,
    kb_name: Annotated[str, Form()],
    file: Annotated[UploadFile | None, File()] = None,
    url: Annotated[str | None, Form()] = None,
    tags: Annotated[str | None, Form(description="Comma-separated or a JSON list")] = None,
    metadata: Annotated[str | None, Form(description="A JSON object")] = None,
    plugin_namespace: Annotated[str | None, Form(description="The instance's own, or 403")] = None,
) -> JSONResponse:
    """Upload a file (multipart ``file``) or name a ``url``; the work runs as a task."""
    request.app.state.gate.check_namespace(plugin_namespace)  # as in a JSON body
    who.check_kb(kb_name)
    if (file is None) == (url is None):
        raise InvalidInputError("send exactly one of file or url", field="file")
    tag_list = _tags(tags)
    meta = _metadata(metadata)
    if file is not None:
        submission = await asyncio.to_thread(
            app.ingest.submit_file,
            kb_name=kb_name,
            filename=multipart_filename(file.filename or "upload"),
            stream=file.file,
            content_type=file.content_type,
            tags=tag_list,
            metadata=meta,
        )
    else:
        submission = await asyncio.to_thread(
            app.ingest.submit_url, kb_name=kb_name, url=str(url), tags=tag_list, metadata=meta
        )
    return JSONResponse(submission.to_dict(), status_code=200 if submission.dedup_hit else 202)


# Browsers (the HTML standard's multipart/form-data encoding) and httpx write these three
# characters of a file name as percent escapes; nothing else is escaped, so a name is read back
# by undoing just these ("report \"final\".md" was stored and shown as report %22final%22.md).
_FORM_NAME_ESCAPES = {"%22": '"', "%0D": "\r", "%0A": "\n"}


def multipart_filename(name: str) -> str:
    for escape, character in _FORM_NAME_ESCAPES.items():
        name = name.replace(escape, character).replace(escape.lower(), character)
    return name


@router.get("/tasks", tags=["tasks"])
async def list_tasks(
    app: App,
    who: Who,
    kb_name: str | None = None,
    status: TaskStatus | None = None,  # another value is a 422, not an empty list
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> list[TaskOut]:
    if kb_name:
        who.check_kb(kb_name)
        # An unknown KB is a 404, as in /documents: an empty list would read as "no tasks".
        await asyncio.to_thread(app.repositories.knowledge_bases.get, kb_name)
    tasks = await asyncio.to_thread(
        app.repositories.tasks.list,
        status=status,
        kb_name=kb_name,
        limit=limit,
        offset=offset,
        kb_names=who.kb_names,
    )
    return await _tasks_out(app, tasks)


async def _tasks_out(app: EagleApp, tasks: Sequence[TaskRecord], **options: bool) -> list[TaskOut]:
    """Each task with its document's file name: a job id alone does not say which file failed."""
    names = await asyncio.to_thread(
        app.repositories.documents.filenames, [t.document_id for t in tasks]
    )
    return [TaskOut(**task_out(t, filename=names.get(t.document_id, ""), **options)) for t in tasks]


@router.get("/tasks/{job_id}", tags=["tasks"])
async def get_task(job_id: str, app: App, who: Who) -> TaskOut:
    task = await asyncio.to_thread(app.repositories.tasks.get, job_id, within=who.kb_names)
    [shown] = await _tasks_out(app, [task], with_log=True)
    return shown


@router.get("/tasks/{job_id}/stream", tags=["tasks"], response_class=EventSourceResponse)
async def stream_task(job_id: str, app: App, who: Who) -> EventSourceResponse:
    """SSE ``progress`` events whenever the task changes, then ``done`` -- or ``error`` when the
    task is deleted or cannot be read for a while. Every stream ends."""
    first = await asyncio.to_thread(app.repositories.tasks.get, job_id, within=who.kb_names)
    names = await asyncio.to_thread(app.repositories.documents.filenames, [first.document_id])
    filename = names.get(first.document_id, "")  # every event says which file, as GET does

    async def events() -> AsyncIterator[dict[str, str]]:
        last, misses = None, 0
        while True:
            try:
                task = await asyncio.to_thread(app.repositories.tasks.get, job_id)
            except NotFoundError as exc:  # deleted with its document: the stream ends too
                yield {"event": "error", "data": json.dumps(exc.to_dict())}
                return
            except EagleError as exc:  # the database may be back soon; not for ever
                misses += 1
                if misses * POLL_S >= STREAM_OUTAGE_S:
                    yield {"event": "error", "data": json.dumps(exc.to_dict())}
                    return
                await asyncio.sleep(POLL_S)
                continue
            except Exception as exc:  # never a cut stream: it ends with an error event
                logger.exception("task stream of %s crashed", job_id)
                yield {"event": "error", "data": json.dumps(error_body(exc))}
                return
            misses = 0
            data = task_out(task, filename=filename)
            state = (data["status"], data["phase"], data["progress"]["current"])
            if state != last:
                last = state
                yield {"event": "progress", "data": json.dumps(data)}
            if task.status in TERMINAL:
                yield {"event": "done", "data": json.dumps(data)}
                return
            await asyncio.sleep(POLL_S)

    return EventSourceResponse(events(), ping=15)


@router.post(
    "/tasks/{job_id}/retry",
    status_code=202,
    tags=["tasks"],
    responses={409: {"model": ErrorOut, "description": "Completed, or a live worker holds it"}},
)
async def retry_task(job_id: str, app: App, who: Who) -> SubmissionOut:
    """Queue a failed task again, or a stranded one (queued or processing, but its worker is
    gone); a completed task, or one a live worker holds, is a 409."""
    await asyncio.to_thread(app.repositories.tasks.get, job_id, within=who.kb_names)
    submission = await asyncio.to_thread(app.ingest.retry, job_id)
    return SubmissionOut(**submission.to_dict())


@router.post(
    "/tasks/{job_id}/cancel",
    status_code=202,
    tags=["tasks"],
    responses={409: {"model": ErrorOut, "description": "The task has finished already"}},
)
async def cancel_task(job_id: str, app: App, who: Who) -> TaskOut:
    """Cancel a queued or running task (a long scan stops within a page): the task and its
    document fail with "cancelled by request" and nothing it wrote is kept; a finished task is
    a 409. Retry it to start again."""
    await asyncio.to_thread(app.repositories.tasks.get, job_id, within=who.kb_names)
    cancelled = await asyncio.to_thread(cancel.cancel_task, app.repositories.tasks, job_id)
    [shown] = await _tasks_out(app, [cancelled], with_log=True)
    return shown


# --- documents --------------------------------------------------------------------------------


@router.get("/documents", tags=["documents"])
async def list_documents(
    app: App,
    who: Who,
    kb_name: str | None = None,
    status: DocumentStatus | None = None,  # another value is a 422, not an empty list
    tag: str | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> list[DocumentOut]:
    if kb_name:
        who.check_kb(kb_name)
        # An unknown KB is a 404, as in /search: an empty list would read as an empty KB.
        await asyncio.to_thread(app.repositories.knowledge_bases.get, kb_name)
    documents = await asyncio.to_thread(
        app.repositories.documents.list,
        kb_name=kb_name,
        status=status,
        tag=tag,
        limit=limit,
        offset=offset,
        kb_names=who.kb_names,
    )
    return [DocumentOut(**document_out(d)) for d in documents]


@router.get("/documents/{document_id}", tags=["documents"])
async def get_document(document_id: str, app: App, who: Who) -> DocumentOut:
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    return DocumentOut(**document_out(document))


@router.get("/documents/{document_id}/structure", tags=["documents"])
async def get_structure(document_id: str, app: App, who: Who) -> dict[str, Any]:
    """The Knowhere section tree: paths, levels, pages and offsets."""
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    return {"document_id": document.id, "structure": dict(document.structure)}


@router.get("/documents/{document_id}/chunks", tags=["documents"])
async def get_chunks(
    document_id: str,
    app: App,
    who: Who,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict[str, Any]:
    """The document's chunks in reading order (section summaries included, typed), ``limit``
    of them from ``offset``; ``total`` counts them all, so a long document is read in pages."""
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    of_document = eq("document_id", document.id)
    # chunk_index is the document-wide reading order without gaps: a page is a range of it
    # (a plain query limit would return an arbitrary subset of a longer document).
    page = of_document & between("chunk_index", ge=offset, le=offset + limit - 1)
    rows = await asyncio.to_thread(app.vectors.query, TEXT_COLLECTION, page, limit=limit)
    total = await asyncio.to_thread(app.vectors.count, TEXT_COLLECTION, of_document)
    rows.sort(key=lambda r: r["chunk_index"])
    chunks = [
        {
            "chunk_id": r["id"],
            "path": r["path"],
            "level": r["level"],
            "type": r["type"],
            "chunk_index": r["chunk_index"],
            "page_nums": list(r.get("page_nums") or []),
            "boxes": list((r.get("metadata") or {}).get("boxes") or []),
            "text": r["text"],
            "metadata": r.get("metadata") or {},
        }
        for r in rows
    ]
    return {
        "document_id": document.id,
        "count": len(chunks),
        "total": total,
        "offset": offset,
        "chunks": chunks,
    }


@router.get("/documents/{document_id}/file", tags=["documents"])
async def get_file(document_id: str, app: App, who: Who) -> StreamingResponse:
    """The original file as it was uploaded."""
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    key = document.object_key
    if not key:
        raise InvalidInputError("this document has no stored original")
    # Streamed chunk by chunk (Starlette iterates a sync iterator in its thread pool); the
    # first chunk is read here, so a missing object is still a 404 rather than a cut response.
    body = iter(app.objects.open(key))
    first = await asyncio.to_thread(next, body, b"")
    response = StreamingResponse(
        itertools.chain([first], body),
        headers={"Content-Disposition": _attachment(document.filename)},
    )
    # Set here, not as media_type: Starlette labels every text/* type utf-8, and a GBK or
    # Shift_JIS original then showed as mojibake. Its charset is the one ingest read it in.
    response.headers["Content-Type"] = _content_type(document.mime_type, first)
    return response


def _content_type(mime_type: str | None, head: bytes) -> str:
    mime = mime_type or "application/octet-stream"
    # HTML names its charset in its <meta>, which a charset here would outrank: left to it.
    charset = text_charset(head) if mime.startswith("text/") and mime != "text/html" else None
    return f"{mime}; charset={charset}" if charset else mime


def _attachment(filename: str) -> str:
    """A Content-Disposition naming ``filename`` whole (RFC 6266): ``filename*`` in UTF-8,
    percent-encoded (quotes and all), and a plain ``filename`` for clients that read only it
    (``curl -OJ``), its non-ASCII letters, quotes, backslashes and controls as ``_``."""
    plain = "".join(c if " " <= c < "\x7f" and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{_quote(filename)}"


@router.delete("/documents/{document_id}", tags=["documents"])
async def delete_document(document_id: str, app: App, who: Who) -> dict[str, Any]:
    await asyncio.to_thread(app.repositories.documents.get, document_id, within=who.kb_names)
    await asyncio.to_thread(remove_document, app, document_id)
    return {"document_id": document_id, "deleted": True}


def _tags(raw: str | None) -> list[str]:
    if not raw:
        return []
    if raw.lstrip().startswith("["):
        parsed = _form_json(raw, "tags", "a JSON list")
        if not isinstance(parsed, list) or not all(isinstance(t, str) for t in parsed):
            raise InvalidInputError("tags must be a list of strings", field="tags")
        return parsed
    return [t.strip() for t in raw.split(",") if t.strip()]


def _metadata(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    parsed = _form_json(raw, "metadata", "JSON")
    if not isinstance(parsed, dict):
        raise InvalidInputError("metadata must be a JSON object", field="metadata")
    return parsed


def _form_json(raw: str, field: str, shape: str) -> Any:
    """A form field's JSON, every way it can be wrong a 400 naming the field (a 5,000-digit
    number was a 500; NaN and Infinity were stored as null)."""

    def not_a_number(name: str) -> Any:
        raise InvalidInputError(f"{field} is not {shape}: {name} is not a JSON number", field=field)

    try:
        parsed = json.loads(raw, parse_constant=not_a_number)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{field} is not {shape}: {exc.msg}", field=field) from exc
    except RecursionError:  # json's own guard against deep nesting: the caller's mistake
        raise InvalidInputError(f"{field} is nested too deeply", field=field) from None
    except ValueError as exc:  # Python's limit on the digits of an integer
        raise InvalidInputError(f"{field} is not {shape}: {exc}", field=field) from None
    return parsed


def _quote(name: str) -> str:
    return quote(name, safe="")
