"""MCP over streamable HTTP: the namespace and API-key checks in front of ``/mcp``.

With API keys configured, a request without a known ``Authorization: Bearer <key>`` is answered
401 before any MCP message is read, so an unauthenticated client cannot even list the tools;
each tool then admits the caller again for its KB scope, namespace and rate limit. Host and
Origin checks stay with fastmcp's ``host_origin_protection``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.datastructures import URLPath
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Match, NoMatchFound

from eagle_rag.api.asgi import Receive, Scope, Send, send_json
from eagle_rag.api.security import NAMESPACE_HEADER, Gatekeeper
from eagle_rag.errors import AuthenticationError, EagleError, NamespaceError, RateLimitedError


class ApiKeyGuard:
    """ASGI middleware: 401 for an HTTP request without a known API key (when keys are set)."""

    def __init__(self, app: Callable[..., Awaitable[None]], *, gate: Gatekeeper) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:  # as on REST: a session opened for another namespace is refused, not each call
            self.gate.check_namespace(headers.get(NAMESPACE_HEADER))
        except NamespaceError as exc:
            await _refuse(send, 403, exc, [])
            return
        if self.gate.open:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        try:
            self.gate.authenticate(
                headers.get("authorization"), client=client[0] if client else None
            )
        except AuthenticationError as exc:
            await _refuse(send, 401, exc, [(b"www-authenticate", b"Bearer")])
            return
        except RateLimitedError as exc:
            retry = str(exc.fields.get("retry_after", 60)).encode()
            await _refuse(send, 429, exc, [(b"retry-after", retry)])
            return
        await self.app(scope, receive, send)


def mcp_middleware(gate: Gatekeeper) -> list[Middleware]:
    """The middleware list for ``FastMCP.http_app``."""
    return [Middleware(ApiKeyGuard, gate=gate)]


async def _refuse(
    send: Send, status: int, error: EagleError, extra: list[tuple[bytes, bytes]]
) -> None:
    await send_json(send, status, error.to_dict(), extra)


class McpEndpoint(BaseRoute):
    """The route that hands ``/mcp`` (and nothing else) to the MCP app.

    Mounted at ``/`` the MCP app would answer every path no other route matched with its own
    plain-text 404, so the API's JSON errors, 405 and its ``Allow`` would never be sent.
    ``/mcp/`` is redirected to ``/mcp`` by the router, as before.
    """

    def __init__(self, app: Callable[..., Awaitable[None]], path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self.methods: set[str] | None = None  # every method: MCP's app answers each itself

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and scope.get("path") == self.path:
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
