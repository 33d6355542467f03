"""``HEAD`` wherever ``GET`` is served: the GET route answers, and only its head is sent.

FastAPI routes declared with ``GET`` take no ``HEAD``; a probe or a client checking a resource
(``HEAD /health``, ``HEAD /knowledge_bases``) got a 405. MCP's own GET opens a stream that never
ends, so ``/mcp`` is left to answer HEAD as it does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from eagle_rag.api.asgi import Receive, Scope, Send

MCP_PATH = "/mcp"
Message = MutableMapping[str, Any]


class HeadAsGet:
    """ASGI middleware: a HEAD request runs as GET; the status and headers (``Content-Length``
    included) are sent, the body is not."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or _is_mcp(scope["path"]):
            await self.app(scope, receive, send)
            return
        head = _HeadOnly(receive, send)
        await self.app({**scope, "method": "GET"}, head.receive, head.send)


class _HeadOnly:
    """Sends the head of the GET's answer and ends it at its first body message. A stream
    (``/tasks/{id}/stream``) would run on unseen until its end: it is told the client left."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive, self._send = receive, send
        self._ended = asyncio.Event()

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            await self._send(message)
        elif message["type"] == "http.response.body" and not self._ended.is_set():
            self._ended.set()
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def receive(self) -> Message:
        if self._ended.is_set():
            return {"type": "http.disconnect"}
        received = asyncio.ensure_future(self._receive())
        ended = asyncio.ensure_future(self._ended.wait())
        await asyncio.wait({received, ended}, return_when=asyncio.FIRST_COMPLETED)
        if received.done():
            ended.cancel()
            return received.result()
        received.cancel()
        return {"type": "http.disconnect"}


def _is_mcp(path: str) -> bool:
    return path.rstrip("/") == MCP_PATH
