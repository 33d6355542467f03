"""Each REST call once, as data: method, path and body, built from typed arguments, and how its
answer is read (an :class:`Exchange`).

Both clients send these and read the answers with them, so the wire contract (field names,
defaults left to the server, the typed results) lives in one place; a client method only sends
an exchange, blocking or awaited. The keyword options are declared once, as TypedDicts, and the
clients' methods take them with ``Unpack``.
"""

from __future__ import annotations

import json
import mimetypes
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Generic, Literal, TypedDict, TypeVar, Unpack
from urllib.parse import quote

from eagle_rag.client.errors import error_from_body
from eagle_rag.client.models import Answer, Document, KnowledgeBase, SearchResult, Submission, Task
from eagle_rag.errors import BackendUnavailableError, InvalidInputError

Mode = Literal["dense", "sparse", "hybrid"]
FileLike = str | Path | bytes | BinaryIO
KbScope = str | Sequence[str] | None
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP request; ``files`` holds uploads already read into memory, so a retry can
    send them again."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    data: Mapping[str, str] | None = None
    files: Mapping[str, tuple[str, bytes, str]] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """Arguments for ``httpx.Client.build_request``."""
        out: dict[str, Any] = {"params": _drop_none(self.params) if self.params else None}
        if self.json is not None:
            out["json"] = self.json
        if self.data is not None:
            out["data"] = dict(self.data)
        if self.files is not None:
            out["files"] = dict(self.files)
        if self.headers:
            out["headers"] = dict(self.headers)
        return out


@dataclass(frozen=True, slots=True)
class Exchange(Generic[T]):
    """A call and how its JSON answer becomes the typed result."""

    call: Call
    read: Callable[[Any], T]


class ScopeOptions(TypedDict, total=False):
    """Which documents a search or an answer looks at, besides its KBs."""

    document_ids: str | Sequence[str] | None  # one id or several
    tags: str | Sequence[str] | None  # one tag or several
    filters: Mapping[str, Any] | None


class SearchOptions(ScopeOptions, total=False):
    """``POST /search``'s options (docs/api.md); None leaves the server's default."""

    top_k: int | None
    mode: Mode | None
    rerank: bool | None
    expand_parents: bool | None
    with_images: bool | None
    token_budget: int | None
    score_threshold: float | None


class AnswerOptions(ScopeOptions, total=False):
    """``POST /query``'s options (docs/api.md); None leaves the server's default."""

    session_id: str | None
    top_k: int | None
    top_n: int | None
    language: Literal["zh", "en"] | None
    mode: Mode | None
    rerank: bool | None
    with_images: bool | None
    # [{name, text}] or [{name, content_base64}]: numbered after the text sources
    attachments: Sequence[Mapping[str, str]] | None


class UploadOptions(TypedDict, total=False):
    """How an ingested file is named, typed, tagged and described."""

    url: str | None
    filename: str | None
    mime_type: str | None
    tags: str | Sequence[str]  # one tag or several
    metadata: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Scope:
    """What a search or an answer looks at: KBs, documents, tags and metadata filters."""

    kb_names: Sequence[str] = ()
    document_ids: Sequence[str] = ()
    tags: Sequence[str] = ()
    filters: Mapping[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kb_names": list(self.kb_names)}
        if self.document_ids:
            body["document_ids"] = list(self.document_ids)
        if self.tags:
            body["tags"] = list(self.tags)
        if self.filters:
            body["filters"] = dict(self.filters)
        return body


def names_of(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """One name or several as a tuple: ``tags="draft"`` is one tag, not five letters (a str is
    a sequence of its characters, so ``list("draft")`` would tag with d, r, a, f and t)."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def scope_of(kb: str | Sequence[str] | None, **rest: Any) -> Scope:
    """A scope from one KB name or several (the ``kb_name`` / ``kb_names`` of REST); tags and
    document ids likewise take one or several."""
    return Scope(
        names_of(kb),
        document_ids=names_of(rest.get("document_ids")),
        tags=names_of(rest.get("tags")),
        filters=rest.get("filters"),
    )


def split_scope(options: dict[str, Any]) -> dict[str, Any]:
    """Take the scope's keywords out of ``options`` (the rest goes into the body)."""
    return {k: options.pop(k) for k in ("document_ids", "tags", "filters") if k in options}


def search_call(
    query: str,
    scope: Scope,
    *,
    top_k: int | None = None,
    mode: Mode | None = None,
    rerank: bool | None = None,
    expand_parents: bool | None = None,
    with_images: bool | None = None,
    token_budget: int | None = None,
    score_threshold: float | None = None,
    stream: bool = False,
) -> Call:
    body = {
        "query": query,
        **scope.body(),
        **_drop_none(
            {
                "top_k": top_k,
                "mode": mode,
                "rerank": rerank,
                "expand_parents": expand_parents,
                "with_images": with_images,
                "token_budget": token_budget,
                "score_threshold": score_threshold,
            }
        ),
    }
    return Call("POST", "/search/stream" if stream else "/search", json=body)


def query_call(
    question: str,
    scope: Scope,
    *,
    session_id: str | None = None,
    top_k: int | None = None,
    top_n: int | None = None,
    language: Literal["zh", "en"] | None = None,
    mode: Mode | None = None,
    rerank: bool | None = None,
    with_images: bool | None = None,
    attachments: Sequence[Mapping[str, str]] | None = None,
    stream: bool = False,
) -> Call:
    body = {
        "query": question,
        **scope.body(),
        **_drop_none(
            {
                "session_id": session_id,
                "top_k": top_k,
                "top_n": top_n,
                "language": language,
                "mode": mode,
                "rerank": rerank,
                "with_images": with_images,
                "attachments": [dict(a) for a in attachments] if attachments else None,
            }
        ),
    }
    return Call("POST", "/query/stream" if stream else "/query", json=body)


def create_kb_call(
    kb_name: str,
    *,
    description: str = "",
    engine: str | None = None,
    creation_settings: Mapping[str, Any] | None = None,
    retrieval_settings: Mapping[str, Any] | None = None,
) -> Call:
    body: dict[str, Any] = {"kb_name": kb_name, "description": description}
    if engine:
        body["engine"] = engine
    if creation_settings:
        body["creation_settings"] = dict(creation_settings)
    if retrieval_settings:
        body["retrieval_settings"] = dict(retrieval_settings)
    return Call("POST", "/knowledge_bases", json=body)


def ingest_call(
    kb_name: str,
    file: FileLike | None = None,
    *,
    url: str | None = None,
    filename: str | None = None,
    mime_type: str | None = None,
    tags: str | Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> Call:
    """A multipart upload of ``file`` (a path, bytes or an open binary file), or a ``url``."""
    if (file is None) == (url is None):
        raise InvalidInputError("give exactly one of file or url", field="file")
    data = {"kb_name": kb_name}
    if tags:
        data["tags"] = json.dumps(list(names_of(tags)))
    if metadata:
        data["metadata"] = json.dumps(dict(metadata))
    if url is not None:
        return Call("POST", "/ingest", data={**data, "url": url})
    name, content = _read(file, filename)  # type: ignore[arg-type]
    guessed = mimetypes.guess_type(name)[0]
    upload = (name, content, mime_type or guessed or "application/octet-stream")
    return Call("POST", "/ingest", data=data, files={"file": upload})


def documents_call(
    kb_name: str | None, status: str | None, tag: str | None, limit: int, offset: int
) -> Call:
    params = {"kb_name": kb_name, "status": status, "tag": tag, "limit": limit, "offset": offset}
    return Call("GET", "/documents", params=params)


def _read(file: FileLike, filename: str | None) -> tuple[str, bytes]:
    if isinstance(file, str | Path):
        path = Path(file)
        try:
            return filename or path.name, path.read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    if isinstance(file, bytes):
        return filename or "upload", file
    content = file.read()
    return filename or Path(str(getattr(file, "name", "upload"))).name, content


def path_segment(value: str) -> str:
    """One URL path segment: every reserved character escaped, and ``.``/``..`` too, so an id
    never climbs to another endpoint (``delete_document("../knowledge_bases/x")``)."""
    quoted = quote(str(value), safe="")
    return quoted.replace(".", "%2E") if quoted in {".", ".."} else quoted


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# --- the exchanges both clients send ------------------------------------------------------------


def list_kbs(limit: int | None = None, offset: int = 0) -> Exchange[list[KnowledgeBase]]:
    """A page of KBs by name; ``limit`` None: the server's largest page (500)."""
    call = Call("GET", "/knowledge_bases", params={"limit": limit, "offset": offset or None})
    return Exchange(call, _each(KnowledgeBase.from_json))


def get_kb(kb_name: str) -> Exchange[KnowledgeBase]:
    return Exchange(
        Call("GET", f"/knowledge_bases/{path_segment(kb_name)}"), KnowledgeBase.from_json
    )


def create_kb(kb_name: str, **options: Any) -> Exchange[KnowledgeBase]:
    """``options``: description, engine, creation_settings, retrieval_settings."""
    return Exchange(create_kb_call(kb_name, **options), KnowledgeBase.from_json)


def rebuild_kb(kb_name: str) -> Exchange[list[Submission]]:
    call = Call("POST", f"/knowledge_bases/{path_segment(kb_name)}/rebuild")
    return Exchange(call, _each(Submission.from_json))


def delete_kb(kb_name: str) -> Exchange[dict[str, Any]]:
    return Exchange(Call("DELETE", f"/knowledge_bases/{path_segment(kb_name)}"), dict)


def ingest(
    kb_name: str, file: FileLike | None = None, **upload: Unpack[UploadOptions]
) -> Exchange[Submission]:
    return Exchange(ingest_call(kb_name, file, **upload), Submission.from_json)


def get_task(job_id: str) -> Exchange[Task]:
    return Exchange(Call("GET", f"/tasks/{path_segment(job_id)}"), Task.from_json)


def list_tasks(**filters: Any) -> Exchange[list[Task]]:
    """``filters``: ``kb_name``, ``status``, ``limit``, ``offset`` as ``GET /tasks`` takes
    them."""
    return Exchange(Call("GET", "/tasks", params=filters), _each(Task.from_json))


def retry_task(job_id: str) -> Exchange[Submission]:
    return Exchange(Call("POST", f"/tasks/{path_segment(job_id)}/retry"), Submission.from_json)


def cancel_task(job_id: str) -> Exchange[Task]:
    return Exchange(Call("POST", f"/tasks/{path_segment(job_id)}/cancel"), Task.from_json)


def task_stream(job_id: str) -> Call:
    return Call("GET", f"/tasks/{path_segment(job_id)}/stream")


def list_documents(
    kb_name: str | None, status: str | None, tag: str | None, limit: int, offset: int
) -> Exchange[list[Document]]:
    call = documents_call(kb_name, status, tag, limit, offset)
    return Exchange(call, _each(Document.from_json))


def get_document(document_id: str) -> Exchange[Document]:
    return Exchange(Call("GET", f"/documents/{path_segment(document_id)}"), Document.from_json)


def document_structure(document_id: str) -> Exchange[dict[str, Any]]:
    call = Call("GET", f"/documents/{path_segment(document_id)}/structure")
    return Exchange(call, lambda body: dict(body["structure"]))


def document_chunks(document_id: str, limit: int, offset: int) -> Exchange[list[dict[str, Any]]]:
    params = {"limit": limit, "offset": offset}
    call = Call("GET", f"/documents/{path_segment(document_id)}/chunks", params=params)
    return Exchange(call, lambda body: list(body["chunks"]))


def delete_document(document_id: str) -> Exchange[bool]:
    return Exchange(
        Call("DELETE", f"/documents/{path_segment(document_id)}"),
        lambda body: bool(body["deleted"]),
    )


def search(
    query: str, kb: KbScope = None, **options: Unpack[SearchOptions]
) -> Exchange[SearchResult]:
    return Exchange(_search(query, kb, options, stream=False), SearchResult.from_json)


def search_stream(query: str, kb: KbScope = None, **options: Unpack[SearchOptions]) -> Call:
    return _search(query, kb, options, stream=True)


def answer(question: str, kb: KbScope = None, **options: Unpack[AnswerOptions]) -> Exchange[Answer]:
    return Exchange(_query(question, kb, options, stream=False), _answer)


def answer_stream(question: str, kb: KbScope = None, **options: Unpack[AnswerOptions]) -> Call:
    return _query(question, kb, options, stream=True)


HEALTH = Call("GET", "/health")


def _search(query: str, kb: KbScope, options: SearchOptions, *, stream: bool) -> Call:
    rest: dict[str, Any] = dict(options)
    return search_call(query, scope_of(kb, **split_scope(rest)), stream=stream, **rest)


def _query(question: str, kb: KbScope, options: AnswerOptions, *, stream: bool) -> Call:
    rest: dict[str, Any] = dict(options)
    return query_call(question, scope_of(kb, **split_scope(rest)), stream=stream, **rest)


def _answer(body: Any) -> Answer:
    """An error after acceptance (the model is down) comes in a 200 body: raise it too."""
    if "error" in body and "answer" not in body:
        raise error_from_body(0, body["error"])
    return Answer.from_json(body)


def _each(read: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    return lambda body: [read(item) for item in body]


def task_event(name: str, data: Any) -> Task | None:
    """A task stream's event as the task it reports (None: an event to skip); an ``error``
    event raises its error."""
    if name in ("progress", "done"):
        return Task.from_json(data)
    if name == "error":
        raise error_from_body(0, data)
    return None


class TaskWait:
    """``wait_for_task``'s state, fed every line of the task's stream. The stream only speaks
    when the task changes, so a task that waits in the queue (or one long page) is silent but
    for keep-alive pings: the clock is read on those too, and the stream's reads are bounded
    by the wait, so ``timeout_s`` holds even when no progress ever comes."""

    def __init__(
        self, job_id: str, timeout_s: float, on_progress: Callable[[Task], None] | None
    ) -> None:
        if timeout_s <= 0:
            raise InvalidInputError("timeout_s must be > 0", field="timeout_s")
        self.job_id = job_id
        self.timeout_s = timeout_s
        self._on_progress = on_progress
        self._deadline = time.monotonic() + timeout_s
        self._last: Task | None = None

    def read_timeout(self, client_timeout_s: float) -> float:
        """How long one read of the stream may wait for a byte."""
        return min(client_timeout_s, self.timeout_s)

    def over(self, name: str, data: Any) -> bool:
        """Take one stream item (``name`` "" is a line that completed no event); True once
        the task has finished or the time is up."""
        task = task_event(name, data) if name else None
        if task is not None:
            self._last = task
            if self._on_progress is not None:
                self._on_progress(task)
            if task.finished:
                return True
        return self.expired

    @property
    def expired(self) -> bool:
        """The time is up (a stream read that timed out then was this wait's own bound)."""
        return time.monotonic() >= self._deadline

    def result(self) -> Task:
        """The finished task; a task still running at the deadline is an error."""
        if self._last is not None and self._last.finished:
            return self._last
        raise BackendUnavailableError(
            f"task {self.job_id} did not finish in {self.timeout_s:g} s",
            job_id=self.job_id,
            task_status=self._last.status if self._last is not None else None,
        )
