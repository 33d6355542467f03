"""MCP over streamable HTTP: the API-key check in front of ``/mcp``.

With API keys configured, a request without a known ``Authorization: Bearer <key>`` is answered
401 before any MCP message is read, so an unauthenticated client cannot even list the tools;
each tool then admits the caller again for its KB scope, namespace and rate limit. Host and
Origin checks stay with fastmcp's ``host_origin_protection``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.middleware import Middleware

from eagle_rag.api.security import Gatekeeper
from eagle_rag.errors import AuthenticationError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class ApiKeyGuard:
    """ASGI middleware: 401 for an HTTP request without a known API key (when keys are set)."""

    def __init__(self, app: Callable[..., Awaitable[None]], *, gate: Gatekeeper) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.gate.open or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self.gate.authenticate(headers.get("authorization"))
        except AuthenticationError as exc:
            await _unauthorized(send, exc)
            return
        await self.app(scope, receive, send)


def mcp_middleware(gate: Gatekeeper) -> list[Middleware]:
    """The middleware list for ``FastMCP.http_app``."""
    return [Middleware(ApiKeyGuard, gate=gate)]


async def _unauthorized(send: Send, error: AuthenticationError) -> None:
    body = json.dumps(error.to_dict()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
