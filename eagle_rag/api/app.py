"""The ASGI application: REST routes, SSE, MCP at ``/mcp``, one lifespan for all of it.

``create_app`` wires without I/O; the lifespan starts the EagleApp (migrations, collections,
plugins, in-process workers in *this* event loop) and the MCP session manager, and stops both.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from eagle_rag import __version__
from eagle_rag.api.contract import install_contract
from eagle_rag.api.cross_site import CrossSiteGuard
from eagle_rag.api.errors import install_error_handlers
from eagle_rag.api.head import HeadAsGet
from eagle_rag.api.hosts import OpenHostGuard
from eagle_rag.api.links import install_links
from eagle_rag.api.metrics import REQUEST_ID_HEADER, Metrics
from eagle_rag.api.refusals import install_framework_refusals, send_refusal
from eagle_rag.api.routes import (
    dify,
    document_pages,
    images,
    knowledge,
    openai_compat,
    pages,
    search,
    system,
)
from eagle_rag.api.security import Gatekeeper
from eagle_rag.bootstrap import EagleApp, build_app
from eagle_rag.errors import EagleError, PayloadTooLargeError
from eagle_rag.mcp.http import McpEndpoint, mcp_middleware
from eagle_rag.mcp.server import build_mcp, sync_tools
from eagle_rag.settings import Settings, load_settings
from eagle_rag.web import mount_web

MULTIPART_OVERHEAD = 1024 * 1024  # form fields and boundaries around an uploaded file
# The answer headers docs/api.md tells clients to read; a page on another origin (CORS) may read
# only these besides the safelisted ones.
EXPOSED_HEADERS = (
    "Retry-After",
    "Content-Disposition",
    REQUEST_ID_HEADER,
    "ETag",
    "X-Page-Count",
    "WWW-Authenticate",
    "Allow",
)

DESCRIPTION = """Cited evidence from your documents for AI agents.

Errors are `{code, message, details?}`. With API keys configured, send
`Authorization: Bearer <key>`. Streams (`/search/stream`, `/query/stream`, `/tasks/{id}/stream`)
are Server-Sent Events. MCP (streamable HTTP) is served at `/mcp`.
"""


def create_app(settings: Settings | None = None, *, eagle: EagleApp | None = None) -> FastAPI:
    settings = settings or load_settings(os.environ)
    eagle = eagle or build_app(settings)
    gate = Gatekeeper(settings)
    mcp = build_mcp(eagle, gate)
    server = settings.server
    mcp_app = mcp.http_app(
        path="/mcp",
        middleware=mcp_middleware(gate),
        host_origin_protection=True,
        allowed_hosts=[*server.mcp_allowed_hosts, server.host, f"{server.host}:{server.port}"],
        allowed_origins=server.mcp_allowed_origins,
    )

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        try:
            await eagle.start()
        except EagleError as exc:  # a refusal with its reason: `serve` reports it in one line
            api.state.startup_refusal = exc
            raise
        sync_tools(mcp, eagle)
        try:
            async with mcp_app.lifespan(api):
                yield
        finally:
            await eagle.stop()

    api = FastAPI(
        title="Eagle-RAG",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    api.state.eagle = eagle
    api.state.startup_refusal = None
    api.state.gate = gate
    api.state.metrics = metrics = Metrics(eagle.stage_metrics, eagle.bus.tracing)
    install_error_handlers(api)
    install_framework_refusals(api)
    for module in (system, knowledge, pages, document_pages, images, search, openai_compat, dify):
        api.include_router(module.router)
    install_links(api)  # OpenAPI links: create → get/delete, for clients and stateful tests
    install_contract(api, keys_required=not gate.open)  # errors and media types as answered
    mount_web(api)  # the built-in UI at / and /ui/...
    api.add_middleware(HeadAsGet)
    api.middleware("http")(metrics.middleware)
    _install_guards(api, settings, gate)
    api.router.routes.append(McpEndpoint(mcp_app))  # /mcp only: other paths get JSON 404/405
    return api


def _install_guards(api: FastAPI, settings: Settings, gate: Gatekeeper) -> None:
    """The middlewares in front of every route, the last added running first: CORS, then body
    size, the open API's host names and other sites' pages. CORS is outermost so that a
    guard's refusal (413, 403) reaches a page of an allowed origin as that answer, not as a
    network error."""
    server = settings.server
    allowed = (*server.cors_origins, *server.mcp_allowed_origins)
    api.add_middleware(CrossSiteGuard, allowed_origins=allowed)
    api.add_middleware(OpenHostGuard, gate=gate, server=server)
    api.add_middleware(
        BodyLimit,
        json_limit=server.max_body_bytes,
        file_limit=settings.ingest.max_file_bytes,
    )
    if server.cors_origins:
        api.add_middleware(
            CORSMiddleware,
            allow_origins=server.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=[
                "Authorization",
                "Content-Type",
                "X-Eagle-Namespace",
                REQUEST_ID_HEADER,
                "If-None-Match",
            ],
            expose_headers=EXPOSED_HEADERS,
        )


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyLimit:
    """Refuse request bodies over the limit with 413, by header and while reading.

    Uploads (multipart) may be as large as a file may be; every other body is capped at
    ``server.max_body_bytes``. Chunked bodies without a length are counted as they arrive.
    The refusal names the setting that was passed: an upload's file limit in MiB.
    """

    def __init__(self, app: Callable[..., Awaitable[None]], *, json_limit: int, file_limit: int):
        self.app = app
        self.json_limit = json_limit
        self.upload_limit = file_limit + MULTIPART_OVERHEAD
        mib = f"{round(file_limit / 2**20, 1):g}"
        self.upload_message = f"the file is larger than the {mib} MiB limit (ingest.max_file_bytes)"
        self.json_message = (
            f"the request body is larger than {json_limit} bytes (server.max_body_bytes)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        multipart = headers.get("content-type", "").startswith("multipart/form-data")
        limit = self.upload_limit if multipart else self.json_limit
        message = self.upload_message if multipart else self.json_message
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await send_refusal(scope, send, PayloadTooLargeError(message))
            return
        guard = _CountedBody(scope, receive, send, limit, message)
        try:
            await self.app(scope, guard.receive, guard.send)
        except Exception:
            # Raised through a middleware's task group it arrives wrapped (an ExceptionGroup,
            # a 500 from a route that reads the body itself): the count says what it was.
            if not guard.exceeded:
                raise
            await guard.refuse()


class _CountedBody:
    """A body without a length, counted as it arrives. Past the limit, reading raises; a
    framework may turn that into an answer of its own (FastAPI: 400 "error parsing the body"),
    so whatever the app answers then is replaced by the 413."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, limit: int, message: str):
        self._scope, self._receive, self._send, self._limit = scope, receive, send, limit
        self._message = message
        self._seen = 0
        self._exceeded = False
        self._started = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._seen += len(message.get("body", b""))
            if self._seen > self._limit:
                self._exceeded = True
                raise _BodyTooLargeError
        return message

    @property
    def exceeded(self) -> bool:
        return self._exceeded

    async def send(self, message: Message) -> None:
        if self._exceeded:
            if message["type"] == "http.response.start":
                await self.refuse()
            return  # the app's own answer to a body it could not read
        self._started = self._started or message["type"] == "http.response.start"
        await self._send(message)

    async def refuse(self) -> None:
        if not self._started:
            self._started = True
            await send_refusal(self._scope, self._send, PayloadTooLargeError(self._message))


class _BodyTooLargeError(Exception):
    """Raised inside the app when the counted body passes the limit."""
