"""HEAD runs the GET route and sends only its head; a stream is ended, not run on unseen."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from eagle_rag.api.head import HeadAsGet


async def endless(request: Request) -> StreamingResponse:
    async def events() -> AsyncIterator[bytes]:
        while True:
            yield b"data: tick\n\n"
            await asyncio.sleep(0)

    return StreamingResponse(events(), media_type="text/event-stream")


async def test_a_head_on_an_endless_stream_ends_with_the_head() -> None:
    app = HeadAsGet(Starlette(routes=[Route("/stream", endless)]))
    scope = {
        "type": "http",
        "method": "HEAD",
        "path": "/stream",
        "raw_path": b"/stream",
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "asgi": {"version": "3.0", "spec_version": "2.3"},
    }
    sent: list[dict[str, Any]] = []
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await never.wait()  # the client stays connected; only the middleware can end this
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await asyncio.wait_for(app(scope, receive, send), timeout=5)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert [m.get("body") for m in sent[1:]] == [b""]
