"""A real HTTP server on 127.0.0.1 with scripted answers, for provider clients (OpenAI-compatible
embeddings now; rerank and chat later). Requests are recorded for assertions."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
