"""``AsyncEagleClient``: the REST API from asyncio code (agents, servers, the adapters)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
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


class AsyncEagleClient:
    """The async twin of :class:`EagleClient`; use with ``async with`` (or ``await aclose()``).

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
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.config = config or ClientConfig.from_env(
            base_url=base_url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries
        )
        self._http = httpx.AsyncClient(
            base_url=self.config.url,
            headers=self.config.headers(),
            timeout=self.config.timeout_s,
            transport=transport,
        )
        self._sleep = sleep

    async def __aenter__(self) -> AsyncEagleClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- knowledge bases ----------------------------------------------------------------------

    async def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return [
            KnowledgeBase.from_json(b) for b in await self._json(Call("GET", "/knowledge_bases"))
        ]

    async def get_knowledge_base(self, kb_name: str) -> KnowledgeBase:
        return KnowledgeBase.from_json(await self._json(Call("GET", f"/knowledge_bases/{kb_name}")))

    async def create_knowledge_base(self, kb_name: str, **options: Any) -> KnowledgeBase:
        """``options``: description, engine, creation_settings, retrieval_settings."""
        return KnowledgeBase.from_json(await self._json(calls.create_kb_call(kb_name, **options)))

    async def delete_knowledge_base(self, kb_name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._json(Call("DELETE", f"/knowledge_bases/{kb_name}"))
        return result

    # --- ingest and tasks ---------------------------------------------------------------------

    async def ingest(
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
        return Submission.from_json(await self._json(call))

    async def get_task(self, job_id: str) -> Task:
        return Task.from_json(await self._json(Call("GET", f"/tasks/{job_id}")))

    async def list_tasks(self, **filters: Any) -> list[Task]:
        """``filters``: ``kb_name``, ``status``, ``limit`` as ``GET /tasks`` takes them."""
        return [Task.from_json(t) for t in await self._json(Call("GET", "/tasks", params=filters))]

    async def retry_task(self, job_id: str) -> Submission:
        return Submission.from_json(await self._json(Call("POST", f"/tasks/{job_id}/retry")))

    async def task_progress(self, job_id: str) -> AsyncIterator[Task]:
        """The task at each change of status, phase or progress (SSE), ending when it ends."""
        async for name, data in self._events(Call("GET", f"/tasks/{job_id}/stream")):
            if name in ("progress", "done"):
                task = Task.from_json(data)
                yield task
                if task.finished:
                    return
            elif name == "error":
                raise error_from_body(0, data)

    async def wait_for_task(
        self,
        job_id: str,
        *,
        timeout_s: float = 900.0,
        on_progress: Callable[[Task], None] | None = None,
    ) -> Task:
        """Follow the task until it completes or fails (a failed task is returned, not raised)."""
        deadline = time.monotonic() + timeout_s
        last: Task | None = None
        async for task in self.task_progress(job_id):
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

    async def list_documents(
        self,
        kb_name: str | None = None,
        *,
        status: str | None = None,
        tag: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Document]:
        call = calls.documents_call(kb_name, status, tag, limit, offset)
        return [Document.from_json(d) for d in await self._json(call)]

    async def get_document(self, document_id: str) -> Document:
        return Document.from_json(await self._json(Call("GET", f"/documents/{document_id}")))

    async def document_structure(self, document_id: str) -> dict[str, Any]:
        body: dict[str, Any] = await self._json(Call("GET", f"/documents/{document_id}/structure"))
        return dict(body["structure"])

    async def document_chunks(self, document_id: str, *, limit: int = 1000) -> list[dict[str, Any]]:
        call = Call("GET", f"/documents/{document_id}/chunks", params={"limit": limit})
        return list((await self._json(call))["chunks"])

    async def delete_document(self, document_id: str) -> bool:
        return bool((await self._json(Call("DELETE", f"/documents/{document_id}")))["deleted"])

    # --- search and answers -------------------------------------------------------------------

    async def search(
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
        return SearchResult.from_json(await self._json(call))

    async def search_stream(
        self, query: str, kb: KbScope = None, **options: Any
    ) -> AsyncIterator[SearchEvent]:
        """``step``*, ``sources``, then the result (``SearchDone``) or an ``ErrorEvent``."""
        scope = calls.scope_of(kb, **calls.split_scope(options))
        async for name, data in self._events(
            calls.search_call(query, scope, stream=True, **options)
        ):
            event = search_event(name, data)
            if event is not None:
                yield event

    async def query(
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
        body = await self._json(call)
        if "error" in body and "answer" not in body:
            raise error_from_body(0, body["error"])
        return Answer.from_json(body)

    async def query_stream(
        self, question: str, kb: KbScope = None, **options: Any
    ) -> AsyncIterator[QueryEvent]:
        """``session``, ``step``*, ``sources``, ``token``*, then the answer or an error event."""
        scope = calls.scope_of(kb, **calls.split_scope(options))
        async for name, data in self._events(
            calls.query_call(question, scope, stream=True, **options)
        ):
            event = query_event(name, data)
            if event is not None:
                yield event

    async def health(self) -> dict[str, Any]:
        """``GET /health`` (a 503 ``down`` answer is returned, not raised)."""
        response = await self._send(Call("GET", "/health"), retry=False)
        body: dict[str, Any] = response.json()
        return body

    # --- transport ----------------------------------------------------------------------------

    async def _json(self, call: Call) -> Any:
        return checked(await self._send(call))

    async def _send(self, call: Call, *, retry: bool = True) -> httpx.Response:
        attempt = 0
        while True:
            request = self._http.build_request(call.method, call.path, **call.kwargs())
            try:
                response = await self._http.send(request)
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
            delay = retry_delay(self.config, response, attempt) if retry else None
            if delay is None:
                return response
            attempt += 1
            await self._sleep(delay)

    @asynccontextmanager
    async def _opened(self, call: Call) -> AsyncIterator[httpx.Response]:
        attempt = 0
        while True:
            request = self._http.build_request(call.method, call.path, **call.kwargs())
            try:
                response = await self._http.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
            delay = retry_delay(self.config, response, attempt)
            if delay is None:
                break
            await response.aclose()
            attempt += 1
            await self._sleep(delay)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise error_of(response)
            yield response
        finally:
            await response.aclose()

    async def _events(self, call: Call) -> AsyncIterator[tuple[str, Any]]:
        decoder = SseDecoder()
        async with self._opened(call) as response:
            try:
                async for line in response.aiter_lines():
                    event = decoder.feed(line)
                    if event is not None:
                        yield event
            except httpx.HTTPError as exc:
                raise unreachable(self.config, exc) from exc
