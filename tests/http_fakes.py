"""A real HTTP server on 127.0.0.1 with scripted answers, for provider clients (OpenAI-compatible
embeddings now; rerank and chat later). Requests are recorded for assertions."""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# A payload is the whole body, or (piece, pause-before-it) pairs streamed until the connection
# closes (HTTP/1.0 framing), for clients that must read a stream as it arrives.
Payload = bytes | Iterable[tuple[bytes, float]]
Handler = Callable[[str, dict[str, Any], dict[str, str]], tuple[int, dict[str, str], Payload]]


@dataclass
class Recorded:
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)


@contextmanager
def serve(handler: Handler) -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:  # multipart uploads and other bodies: kept raw for assertions
                body = {"_raw": raw}
            headers = {k.lower(): v for k, v in self.headers.items()}
            headers[":method"] = self.command
            recorded.requests.append((self.path, body, headers))
            status, extra, payload = handler(self.path, body, headers)
            self.send_response(status)
            for key, value in extra.items():
                self.send_header(key, value)
            if isinstance(payload, bytes):
                self.send_header("content-length", str(len(payload)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the client gave up first (timeouts)
                if isinstance(payload, bytes):
                    self.wfile.write(payload)
                    return
                for piece, pause in payload:  # a stream: written piece by piece, ended by close
                    time.sleep(pause)
                    self.wfile.write(piece)
                    self.wfile.flush()

        do_DELETE = do_POST  # noqa: N815  (the name http.server dispatches to)
        do_GET = do_POST  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", recorded
    finally:
        server.shutdown()
        server.server_close()


def json_answer(status: int, body: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"content-type": "application/json", **headers}, json.dumps(body).encode()


def embeddings_body(inputs: list[str], dim: int) -> dict[str, Any]:
    """Vectors that depend on the text (so different inputs differ), in shuffled index order."""
    data = []
    for index, text in enumerate(inputs):
        seed = sum(map(ord, text)) or 1
        vector = [((seed * (i + 3)) % 17) - 8.0 for i in range(dim)]
        data.append({"object": "embedding", "index": index, "embedding": vector})
    return {"object": "list", "data": list(reversed(data)), "model": "m"}


def slow(seconds: float) -> None:
    time.sleep(seconds)


@contextmanager
def forward_proxy(hosts: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """A forward proxy on 127.0.0.1 that resolves names from ``hosts`` itself, as a real one
    does with its DNS: absolute-form requests are forwarded, CONNECT is tunnelled. Yields its
    URL and the request lines it saw (``GET http://name:port/path``, ``CONNECT name:port``)."""
    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def do_CONNECT(self) -> None:
            seen.append(f"CONNECT {self.path}")
            host, _, port = self.path.rpartition(":")
            with socket.create_connection((hosts.get(host, host), int(port))) as upstream:
                self.send_response(200)
                self.end_headers()
                _pipe(self.connection, upstream)
            self.close_connection = True

        def do_POST(self) -> None:
            seen.append(f"{self.command} {self.path}")
            url = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            kept = {k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"}
            upstream = http.client.HTTPConnection(hosts.get(url.hostname or "", ""), url.port)
            path = url.path + (f"?{url.query}" if url.query else "")
            upstream.request(self.command, path, body, kept)
            answer = upstream.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in ("connection", "content-length", "transfer-encoding"):
                    self.send_header(key, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            upstream.close()

        do_GET = do_POST  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    """Bytes both ways until either side closes (or 5 s of silence)."""
    pair = {client: upstream, upstream: client}
    while True:
        readable, _, _ = select.select(list(pair), [], [], 5)
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            pair[sock].sendall(data)
