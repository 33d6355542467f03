"""A TCP proxy a test can cut and restore: the backend behind it "goes down" (connections
refused, open ones reset) and "comes back" on the same address, without stopping the real
server behind it (a PostgreSQL, a Milvus server, a local model endpoint)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

CHUNK = 65536


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to ``target``; ``cut()`` and ``restore()`` switch it."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = _free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._open: set[asyncio.StreamWriter] = set()

    @classmethod
    def for_url(cls, url: str) -> CuttableProxy:
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", int(parts.port or 80))

    def url(self, url: str) -> str:
        """``url`` with its host:port swapped for the proxy's (user and path kept)."""
        parts = urlsplit(url)
        user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def __enter__(self) -> CuttableProxy:
        self._thread.start()
        self.restore()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def cut(self) -> None:
        """Refuse new connections and reset the open ones (what a crashed backend looks like)."""
        asyncio.run_coroutine_threadsafe(self._cut(), self._loop).result(timeout=10)

    def restore(self) -> None:
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._pipe, "127.0.0.1", self.port, reuse_address=True
            )

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, upstream}
        await asyncio.gather(_copy(reader, upstream), _copy(upstream_reader, writer))
        self._open -= {writer, upstream}


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(OSError):
        if not sink.is_closing():
            sink.close()
