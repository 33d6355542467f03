"""Streams the UI reads: an event split across network chunks, a progress stream that drops,
an answer still streaming when the reader starts another conversation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.api.server import RunningServer
from tests.web.helpers import choose_files, upload_row, wait_status

pytestmark = pytest.mark.browser

# fetch() for one URL answers with a body sent in the given pieces, a pause between them.
CHUNKED_FETCH = """
([suffix, pieces]) => {
  const realFetch = window.fetch;
  window.fetch = async (url, options) => {
    if (!String(url).endsWith(suffix)) return realFetch(url, options);
    const left = [...pieces];
    const encoder = new TextEncoder();
    const body = new ReadableStream({ async pull(controller) {
      await new Promise((r) => setTimeout(r, 30));
      if (left.length) controller.enqueue(encoder.encode(left.shift()));
      else controller.close();
    } });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  };
}
"""


def fake_ingest(page: Any, job_id: str) -> None:
    """POST /ingest is accepted as ``job_id`` without reaching the server."""
    accepted = {"job_id": job_id, "document_id": "d", "status": "queued", "dedup_hit": False}
    page.route(
        re.compile(r"/ingest$"),
        lambda route: route.fulfill(status=202, json=accepted),
    )


def test_an_event_whose_crlf_is_split_between_chunks_is_still_read(
    page: Any, server: RunningServer
) -> None:
    working = {"status": "processing", "phase": "parse", "progress": {"current": 1, "total": 2}}
    finished = {"status": "completed", "phase": "done", "progress": {"current": 2, "total": 2}}
    pieces = [
        "event: progress\r",
        "\ndata: " + json.dumps(working) + "\r\n\r\n",
        "event: done\r",
        "\ndata: " + json.dumps(finished) + "\r",
        "\n\r",
        "\n",
    ]
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "split"}).status_code == 201
    page.goto(server.url + "/ui/kb/split")
    page.wait_for_selector("#dropzone")
    page.evaluate(CHUNKED_FETCH, ["/tasks/split-job/stream", pieces])
    fake_ingest(page, "split-job")
    choose_files(page, [("split.md", "text/markdown", b"# Split")])
    wait_status(page, "split.md", "completed", timeout=10_000)
    assert upload_row(page, "split.md").get_attribute("data-phases") == "parse,done"
