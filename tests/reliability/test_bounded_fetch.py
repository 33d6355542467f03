"""The URL fetch has an overall deadline: a server that trickles bytes, each within the per-read
timeout, cannot hold an ingest request for ever."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eagle_rag.errors import UpstreamError
from eagle_rag.ingest.fetch import UrlFetcher
from eagle_rag.settings import IngestSettings


class _Trickle(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", "1000")
        self.end_headers()
        for _ in range(1000):  # one byte every 50 ms: 50 s in all, every read in time
            try:
                self.wfile.write(b"x")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.05)

    def log_message(self, *args: object) -> None:
        pass


def test_a_trickling_download_stops_at_the_deadline() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = IngestSettings(url_allow_private=True, url_timeout_s=1, url_deadline_s=1.5)
    started = time.monotonic()
    try:
        with pytest.raises(UpstreamError, match=r"took longer than 1\.5 s"):
            UrlFetcher(settings).fetch(f"http://127.0.0.1:{server.server_address[1]}/slow.txt")
    finally:
        server.shutdown()
        server.server_close()
    assert time.monotonic() - started < 5
