"""``EagleClient``: the REST API from synchronous code (scripts, notebooks, the CLI)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, Unpack

import httpx
from httpx._client import USE_CLIENT_DEFAULT, UseClientDefault

from eagle_rag.client import calls, pages, sessions
from eagle_rag.client.calls import (
    AnswerOptions,
    Call,
    Exchange,
    FileLike,
    KbScope,
    Mode,
    SearchOptions,
    TaskWait,
    UploadOptions,
    task_event,
)
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
from eagle_rag.client.pages import PageSearch
from eagle_rag.client.sessions import Message, Session
from eagle_rag.client.transport import (
    ClientConfig,
    SseDecoder,
    checked,
    error_of,
    retry_delay,
    unreachable,
)
from eagle_rag.errors import BackendUnavailableError

T = TypeVar("T")


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
        self._http = httpx.Client(transport=transport, **self.config.http_options())
        self._sleep = sleep

    def __enter__(self) -> EagleClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- knowledge bases ----------------------------------------------------------------------

    def list_knowledge_bases(
        self, *, limit: int | None = None, offset: int = 0
    ) -> list[KnowledgeBase]:
        """The KBs this key may use, by name: a page of ``limit`` (None: the server's largest,
        500) from ``offset``, like ``list_documents``."""
        return self._run(calls.list_kbs(limit, offset))

    def get_knowledge_base(self, kb_name: str) -> KnowledgeBase:
        return self._run(calls.get_kb(kb_name))

    def create_knowledge_base(self, kb_name: str, **options: Any) -> KnowledgeBase:
        """``options``: description, engine, creation_settings, retrieval_settings."""
        return self._run(calls.create_kb(kb_name, **options))

    def rebuild_knowledge_base(self, kb_name: str) -> list[Submission]:
        """Run every document of the KB through the pipeline again: one job each."""
        return self._run(calls.rebuild_kb(kb_name))

    def delete_knowledge_base(self, kb_name: str) -> dict[str, Any]:
        return self._run(calls.delete_kb(kb_name))

    # --- ingest and tasks ---------------------------------------------------------------------

    def ingest(
        self, kb_name: str, file: FileLike | None = None, **upload: Unpack[UploadOptions]
    ) -> Submission:
        """Upload a file (path, bytes or binary file) or name a ``url``; returns the ingest job."""
        return self._run(calls.ingest(kb_name, file, **upload))

    def get_task(self, job_id: str) -> Task:
        return self._run(calls.get_task(job_id))

    def list_tasks(self, **filters: Any) -> list[Task]:
        """``filters``: ``kb_name``, ``status``, ``limit``, ``offset`` as ``GET /tasks`` takes
        them."""
        return self._run(calls.list_tasks(**filters))

    def retry_task(self, job_id: str) -> Submission:
        return self._run(calls.retry_task(job_id))

    def cancel_task(self, job_id: str) -> Task:
        """Stop a queued or running task (a long scan within a page); nothing it wrote is kept.
        A finished task raises ConflictError (409)."""
        return self._run(calls.cancel_task(job_id))

    def task_progress(self, job_id: str) -> Iterator[Task]:
        """The task at each change of status, phase or progress (SSE), ending when it ends."""
        for name, data in self._events(calls.task_stream(job_id)):
            task = task_event(name, data)
            if task is not None:
                yield task
                if task.finished:
                    return

    def wait_for_task(
        self,
        job_id: str,
        *,
        timeout_s: float = 900.0,
        on_progress: Callable[[Task], None] | None = None,
    ) -> Task:
        """Follow the task until it completes or fails (a failed task is returned, not raised);
        still running after ``timeout_s`` (give or take one keep-alive ping, 15 s): an error."""
        wait = TaskWait(job_id, timeout_s, on_progress)
        call = calls.task_stream(job_id)
        read_s = wait.read_timeout(self.config.timeout_s)
        try:
            for name, data in self._events(call, ticks=True, read_timeout_s=read_s):
                if wait.over(name, data):
                    break
        except BackendUnavailableError:
            if not wait.expired:  # the server went away, not the wait's own read bound
                raise
        return wait.result()

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
        return self._run(calls.list_documents(kb_name, status, tag, limit, offset))

    def get_document(self, document_id: str) -> Document:
        return self._run(calls.get_document(document_id))

    def document_structure(self, document_id: str) -> dict[str, Any]:
        return self._run(calls.document_structure(document_id))

    def document_chunks(
        self, document_id: str, *, limit: int = 1000, offset: int = 0
    ) -> list[dict[str, Any]]:
        """``limit`` chunks in reading order from ``offset`` (a long document: in pages)."""
        return self._run(calls.document_chunks(document_id, limit, offset))

    def delete_document(self, document_id: str) -> bool:
        return self._run(calls.delete_document(document_id))

    def best_pages(
        self,
        document_id: str,
        query: str,
        *,
        top_k: int | None = None,
        depth: int | None = None,
        mode: Mode | None = None,
    ) -> PageSearch:
        """The document's pages that best answer ``query`` (``top_k`` of them, ranked from
        ``depth`` passages), each with its evidence and boxes; None: the server's default."""
        exchange = pages.best_pages(document_id, query, top_k=top_k, depth=depth, mode=mode)
        return self._run(exchange)

    # --- search and answers -------------------------------------------------------------------

    def search(
        self, query: str, kb: KbScope = None, **options: Unpack[SearchOptions]
    ) -> SearchResult:
        """Ranked evidence; ``kb`` is one KB name or several."""
        return self._run(calls.search(query, kb, **options))

    def search_stream(
        self, query: str, kb: KbScope = None, **options: Unpack[SearchOptions]
    ) -> Iterator[SearchEvent]:
        """``step``*, ``sources``, then the result (``SearchDone``) or an ``ErrorEvent`` (a
        failure once started); a caller's mistake (unknown KB, bad filter) raises at once."""
        for name, data in self._events(calls.search_stream(query, kb, **options)):
            event = search_event(name, data)
            if event is not None:
                yield event

    def query(self, question: str, kb: KbScope = None, **options: Unpack[AnswerOptions]) -> Answer:
        """A cited answer; an error after acceptance (the model is down) raises as well."""
        return self._run(calls.answer(question, kb, **options))

    def query_stream(
        self, question: str, kb: KbScope = None, **options: Unpack[AnswerOptions]
    ) -> Iterator[QueryEvent]:
        """``session``, ``step``*, ``sources``, ``token``*, then the answer or an error event (a
        failure once started); a caller's mistake (unknown KB, bad filter) raises at once."""
        for name, data in self._events(calls.answer_stream(question, kb, **options)):
            event = query_event(name, data)
            if event is not None:
                yield event

    # --- sessions -----------------------------------------------------------------------------

    def list_sessions(self) -> list[Session]:
        """The conversations this key may see, the most recently active first (100)."""
        return self._run(sessions.list_sessions())

    def session_messages(self, session_id: str) -> list[Message]:
        """A conversation's turns in order, each answer with its sources."""
        return self._run(sessions.session_messages(session_id))

    def delete_session(self, session_id: str) -> bool:
        return self._run(sessions.delete_session(session_id))

    def health(self) -> dict[str, Any]:
        """``GET /health`` (a 503 ``down`` answer is returned, not raised)."""
        body: dict[str, Any] = self._send(calls.HEALTH, retry=False).json()
        return body

    # --- transport ----------------------------------------------------------------------------

    def _timeout(self, read_timeout_s: float | None) -> httpx.Timeout | UseClientDefault:
        """A stream's own read timeout, when its reader keeps a deadline of its own."""
        if read_timeout_s is None:
            return USE_CLIENT_DEFAULT
        return httpx.Timeout(self.config.timeout_s, read=read_timeout_s)

    def _run(self, exchange: Exchange[T]) -> T:
        return exchange.read(checked(self._send(exchange.call)))

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
    def _opened(self, call: Call, read_timeout_s: float | None = None) -> Iterator[httpx.Response]:
        attempt = 0
        while True:
            request = self._http.build_request(
                call.method, call.path, **call.kwargs(), timeout=self._timeout(read_timeout_s)
            )
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

    def _events(
        self, call: Call, *, ticks: bool = False, read_timeout_s: float | None = None
    ) -> Iterator[tuple[str, Any]]:
        decoder = SseDecoder()
        with self._opened(call, read_timeout_s) as response:
            try:
                for line in response.iter_lines():
                    event = decoder.feed(line)
                    if event is not None:
                        yield event
                    elif ticks:  # a ping or part of an event: a chance to look at the clock
                        yield "", None
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
