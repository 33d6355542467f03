"""``HEAD`` wherever ``GET`` is served: the GET route answers, and only its head is sent.

FastAPI routes declared with ``GET`` take no ``HEAD``; a probe or a client checking a resource
(``HEAD /health``, ``HEAD /knowledge_bases``) got a 405. MCP's own GET opens a stream that never
ends, so ``/mcp`` is left to answer HEAD as it does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from eagle_rag.api.asgi import Receive, Scope, Send

MCP_PATH = "/mcp"


class HeadAsGet:
    """ASGI middleware: a HEAD request runs as GET; the status and headers (``Content-Length``
    included) are sent, the body is not."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or _is_mcp(scope["path"]):
            await self.app(scope, receive, send)
            return
        finished = False

        async def send_head(message: MutableMapping[str, Any]) -> None:
            nonlocal finished
            if message["type"] == "http.response.start":
                await send(message)
            elif message["type"] == "http.response.body" and not finished:
                finished = True  # the end of the answer: whatever the GET would stream is dropped
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app({**scope, "method": "GET"}, receive, send_head)


def _is_mcp(path: str) -> bool:
    return path.rstrip("/") == MCP_PATH
