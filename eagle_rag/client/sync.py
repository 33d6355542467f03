"""``EagleClient``: the REST API from synchronous code (scripts, notebooks, the CLI)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import httpx

from eagle_rag.client import calls
from eagle_rag.client.calls import Call, FileLike, Mode
from eagle_rag.client.errors import error_from_body
from eagle_rag.client.models import (
    Answer,
    Document,
    KnowledgeBase,
    QueryEvent,
    SearchEvent,
    SearchResult,
    Submission,
    Task,
    query_event,
    search_event,
)
from eagle_rag.client.transport import (
    ClientConfig,
    SseDecoder,
    checked,
    error_of,
    retry_delay,
    unreachable,
)

KbScope = str | Sequence[str] | None


class EagleClient:
    """A typed client; use as a context manager (or call ``close``).

    Every error answer raises its class of :mod:`eagle_rag.errors` (``NotFoundError``,
    ``PermissionDeniedError``...); 429 and 503 are retried after the server's ``Retry-After``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float | None = None,
        max_retries: int | None = None,
        config: ClientConfig | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config or ClientConfig.from_env(
            base_url=base_url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries
        )
        self._http = httpx.Client(
            base_url=self.config.url,
            headers=self.config.headers(),
            timeout=self.config.timeout_s,
            transport=transport,
        )
        self._sleep = sleep

    def __enter__(self) -> EagleClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- knowledge bases ----------------------------------------------------------------------

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return [KnowledgeBase.from_json(b) for b in self._json(Call("GET", "/knowledge_bases"))]

    def get_knowledge_base(self, kb_name: str) -> KnowledgeBase:
        return KnowledgeBase.from_json(self._json(Call("GET", f"/knowledge_bases/{kb_name}")))

    def create_knowledge_base(self, kb_name: str, **options: Any) -> KnowledgeBase:
        """``options``: description, engine, creation_settings, retrieval_settings."""
        return KnowledgeBase.from_json(self._json(calls.create_kb_call(kb_name, **options)))

    def delete_knowledge_base(self, kb_name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._json(Call("DELETE", f"/knowledge_bases/{kb_name}"))
        return result

    # --- ingest and tasks ---------------------------------------------------------------------

    def ingest(
        self,
        kb_name: str,
        file: FileLike | None = None,
        *,
        url: str | None = None,
        filename: str | None = None,
        mime_type: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Submission:
        """Upload a file (path, bytes or binary file) or name a URL; returns the ingest job."""
        call = calls.ingest_call(
            kb_name,
            file,
            url=url,
            filename=filename,
            mime_type=mime_type,
            tags=tags,
            metadata=metadata,
        )
        return Submission.from_json(self._json(call))

    def get_task(self, job_id: str) -> Task:
        return Task.from_json(self._json(Call("GET", f"/tasks/{job_id}")))

    def list_tasks(self, **filters: Any) -> list[Task]:
        """``filters``: ``kb_name``, ``status``, ``limit`` as ``GET /tasks`` takes them."""
        return [Task.from_json(t) for t in self._json(Call("GET", "/tasks", params=filters))]

    def retry_task(self, job_id: str) -> Submission:
        return Submission.from_json(self._json(Call("POST", f"/tasks/{job_id}/retry")))

    def task_progress(self, job_id: str) -> Iterator[Task]:
        """The task at each change of status, phase or progress (SSE), ending when it ends."""
        for name, data in self._events(Call("GET", f"/tasks/{job_id}/stream")):
            if name in ("progress", "done"):
                task = Task.from_json(data)
                yield task
                if task.finished:
                    return
            elif name == "error":
                raise error_from_body(0, data)

    def wait_for_task(
        self,
        job_id: str,
        *,
        timeout_s: float = 900.0,
        on_progress: Callable[[Task], None] | None = None,
    ) -> Task:
        """Follow the task until it completes or fails (a failed task is returned, not raised)."""
        deadline = time.monotonic() + timeout_s
        last: Task | None = None
        for task in self.task_progress(job_id):
            last = task
            if on_progress is not None:
                on_progress(task)
            if task.finished:
                return task
            if time.monotonic() > deadline:
                break
        if last is not None and last.finished:
            return last
        from eagle_rag.errors import BackendUnavailableError

        raise BackendUnavailableError(f"task {job_id} did not finish in {timeout_s:g} s")

    # --- documents ----------------------------------------------------------------------------

    def list_documents(
        self,
        kb_name: str | None = None,
        *,
        status: str | None = None,
        tag: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Document]:
        call = calls.documents_call(kb_name, status, tag, limit, offset)
        return [Document.from_json(d) for d in self._json(call)]

    def get_document(self, document_id: str) -> Document:
        return Document.from_json(self._json(Call("GET", f"/documents/{document_id}")))

    def document_structure(self, document_id: str) -> dict[str, Any]:
        body: dict[str, Any] = self._json(Call("GET", f"/documents/{document_id}/structure"))
        return dict(body["structure"])

    def document_chunks(self, document_id: str, *, limit: int = 1000) -> list[dict[str, Any]]:
        call = Call("GET", f"/documents/{document_id}/chunks", params={"limit": limit})
        return list(self._json(call)["chunks"])

    def delete_document(self, document_id: str) -> bool:
        return bool(self._json(Call("DELETE", f"/documents/{document_id}"))["deleted"])

    # --- search and answers -------------------------------------------------------------------

    def search(
        self,
        query: str,
        kb: KbScope = None,
        *,
        document_ids: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        top_k: int | None = None,
        mode: Mode | None = None,
        rerank: bool | None = None,
        with_images: bool | None = None,
        score_threshold: float | None = None,
        **options: Any,
    ) -> SearchResult:
        """Ranked evidence; ``kb`` is one KB name or several."""
        scope = calls.scope_of(kb, document_ids=document_ids, tags=tags, filters=filters)
        call = calls.search_call(
            query,
            scope,
            top_k=top_k,
            mode=mode,
            rerank=rerank,
            with_images=with_images,
            score_threshold=score_threshold,
            **options,
        )
        return SearchResult.from_json(self._json(call))

    def search_stream(
        self, query: str, kb: KbScope = None, **options: Any
    ) -> Iterator[SearchEvent]:
        """``step``*, ``sources``, then the result (``SearchDone``) or an ``ErrorEvent``."""
        scope = calls.scope_of(kb, **calls.split_scope(options))
        for name, data in self._events(calls.search_call(query, scope, stream=True, **options)):
            event = search_event(name, data)
            if event is not None:
                yield event

    def query(
        self,
        question: str,
        kb: KbScope = None,
        *,
        session_id: str | None = None,
        top_n: int | None = None,
        language: Literal["zh", "en"] | None = None,
        **options: Any,
    ) -> Answer:
        """A cited answer; an error after acceptance (the model is down) raises as well."""
        scope = calls.scope_of(kb, **calls.split_scope(options))
        call = calls.query_call(
            question, scope, session_id=session_id, top_n=top_n, language=language, **options
        )
        body = self._json(call)
        if "error" in body and "answer" not in body:
            raise error_from_body(0, body["error"])
        return Answer.from_json(body)

    def query_stream(
        self, question: str, kb: KbScope = None, **options: Any
    ) -> Iterator[QueryEvent]:
        """``session``, ``step``*, ``sources``, ``token``*, then the answer or an error event."""
        scope = calls.scope_of(kb, **calls.split_scope(options))
        for name, data in self._events(calls.query_call(question, scope, stream=True, **options)):
            event = query_event(name, data)
            if event is not None:
                yield event

    def health(self) -> dict[str, Any]:
        """``GET /health`` (a 503 ``down`` answer is returned, not raised)."""
        response = self._send(Call("GET", "/health"), retry=False)
        body: dict[str, Any] = response.json()
        return body

    # --- transport ----------------------------------------------------------------------------

    def _json(self, call: Call) -> Any:
        return checked(self._send(call))

    def _send(self, call: Call, *, retry: bool = True) -> httpx.Response:
        attempt = 0
        while True:
            request = self._http.build_request(call.method, call.path, **call.kwargs())
            try:
                response = self._http.send(request)
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
            delay = retry_delay(self.config, response, attempt) if retry else None
            if delay is None:
                return response
            attempt += 1
            self._sleep(delay)

    @contextmanager
    def _opened(self, call: Call) -> Iterator[httpx.Response]:
        attempt = 0
        while True:
            request = self._http.build_request(call.method, call.path, **call.kwargs())
            try:
                response = self._http.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
            delay = retry_delay(self.config, response, attempt)
            if delay is None:
                break
            response.close()
            attempt += 1
            self._sleep(delay)
        try:
            if response.status_code >= 400:
                response.read()
                raise error_of(response)
            yield response
        finally:
            response.close()

    def _events(self, call: Call) -> Iterator[tuple[str, Any]]:
        decoder = SseDecoder()
        with self._opened(call) as response:
            try:
                for line in response.iter_lines():
                    event = decoder.feed(line)
                    if event is not None:
                        yield event
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
