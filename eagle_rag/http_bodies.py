"""Response bodies from hosts Eagle-RAG does not control, read under a size cap that holds
after decompression.

httpx inflates each network read whole before a caller can count it: a 25 KB zstd answer grew
memory by 800 MB before a 100 MiB cap refused it, and a bridged "Dify" answering 49 KB of zstd
took the server to 5 GB. So such bodies are read raw and inflated here, at most up to the cap:
only ``gzip`` and ``deflate`` are asked for (``ACCEPT_ENCODING``) and read; a body in any other
encoding (``zstd``, ``br``, which a server may send unasked) is refused.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import httpx

from eagle_rag.errors import PayloadTooLargeError, UpstreamError

ACCEPT_ENCODING = {"Accept-Encoding": "gzip, deflate"}
_GZIP_WBITS = 16 + zlib.MAX_WBITS


class BoundedBody:
    """One body's raw bytes → its decoded bytes, refused once they pass ``limit``."""

    def __init__(self, response: httpx.Response, limit: int, what: str) -> None:
        self._limit = limit
        self._what = what
        self._total = 0
        self._pieces: list[bytes] = []
        encoding = response.headers.get("content-encoding", "").strip().lower()
        declared = response.headers.get("content-length", "")
        if encoding in ("", "identity") and declared.isdigit() and int(declared) > limit:
            raise too_large(what, limit)
        if encoding in ("", "identity"):
            self._inflate: zlib._Decompress | None = None
        elif encoding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(_GZIP_WBITS)
        elif encoding == "deflate":
            self._inflate = zlib.decompressobj()
        else:
            raise UpstreamError(
                f"{what} was sent {encoding!r}-compressed, which is not read (only gzip and "
                "deflate, the encodings asked for)",
                encoding=encoding[:40],
            )

    def feed(self, raw: bytes) -> None:
        if self._inflate is None:
            self._add(raw)
            return
        try:
            while raw:
                piece = self._inflate.decompress(raw, self._limit - self._total + 1)
                self._add(piece)
                raw = self._inflate.unconsumed_tail
        except zlib.error as exc:
            raise UpstreamError(f"{self._what} is not validly compressed: {exc}") from exc

    def content(self) -> bytes:
        return b"".join(self._pieces)

    def _add(self, piece: bytes) -> None:
        self._total += len(piece)
        if self._total > self._limit:
            raise too_large(self._what, self._limit)
        self._pieces.append(piece)


def read_capped(
    response: httpx.Response, limit: int, what: str, on_read: Callable[[], None] | None = None
) -> bytes:
    """The decoded body of a streamed ``response``, under ``limit`` bytes; ``on_read`` runs
    after each network read (a caller's deadline)."""
    if response.is_stream_consumed:  # read before it got here (an in-memory transport)
        return _checked_size(response.content, limit, what)
    body = BoundedBody(response, limit, what)
    for raw in response.iter_raw():
        body.feed(raw)
        if on_read is not None:
            on_read()
    return body.content()


async def aread_capped(response: httpx.Response, limit: int, what: str) -> bytes:
    """The decoded body of a streamed async ``response``, under ``limit`` bytes."""
    if response.is_stream_consumed:
        return _checked_size(response.content, limit, what)
    body = BoundedBody(response, limit, what)
    async for raw in response.aiter_raw():
        body.feed(raw)
    return body.content()


def _checked_size(content: bytes, limit: int, what: str) -> bytes:
    if len(content) > limit:
        raise too_large(what, limit)
    return content


def too_large(what: str, limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"{what} is larger than {limit} bytes", limit=limit)
