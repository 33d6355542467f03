"""A 500-page scanned PDF through the real app over HTTP: its page limit, its per-page progress
on the task and its SSE stream, and cancelling it while OCR runs (nothing it wrote is kept)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from tests.api.server import RunningServer, running_server, sse_events, wait_for_task
from tests.ingest.long_scan import PAGES, long_scan


def test_the_page_limit_refuses_a_long_scan_before_any_page_is_read() -> None:
    seen: list[tuple[int, int]] = []
    context = ParseContext(
        long_scan(), "long.pdf", d.PDF, max_pages=PAGES - 1, on_page=lambda *p: seen.append(p)
    )
    parser = PdfParser(OcrEngine())
    with pytest.raises(InvalidInputError, match=f"{PAGES} pages \\(limit {PAGES - 1}\\)"):
        parser.parse(context)
    assert seen == []
    assert not parser.ocr.loaded  # no model was even loaded


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    data = Path(tmp_path_factory.mktemp("long-scans"))
    with running_server(data, ingest={"progress_interval_s": 0.2}) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as http:
        assert http.post("/knowledge_bases", json={"kb_name": "long"}).status_code == 201
        yield http


def _submit(client: httpx.Client, name: str, data: bytes) -> str:
    answer = client.post("/ingest", data={"kb_name": "long"}, files={"file": (name, data)})
    assert answer.status_code == 202, answer.text
    return str(answer.json()["job_id"])


def _progress_until(
    client: httpx.Client, job_id: str, pages: int, timeout: float = 180
) -> list[dict[str, object]]:
    """The SSE ``progress`` events of a task until it has reported ``pages`` pages."""
    seen: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout
    with client.stream("GET", f"/tasks/{job_id}/stream", timeout=timeout) as response:
        for name, data in sse_events(response):
            event = json.loads(data)
            seen.append(event)
            assert name == "progress", event  # still running
            if event["phase"] == "parse" and int(event["progress"]["current"]) >= pages:
                return seen
            assert time.monotonic() < deadline, seen
    raise AssertionError(f"the stream ended before {pages} pages: {seen}")


def test_a_long_scan_shows_page_progress_and_stops_when_cancelled(
    server: RunningServer, client: httpx.Client
) -> None:
    job_id = _submit(client, "long.pdf", long_scan())
    events = _progress_until(client, job_id, pages=2)
    last = events[-1]["progress"]
    assert last["total"] == PAGES  # type: ignore[index]
    shown = client.get(f"/tasks/{job_id}").json()
    assert shown["status"] == "processing" and shown["phase"] == "parse"

    cancelled = client.post(f"/tasks/{job_id}/cancel")
    assert cancelled.status_code == 202, cancelled.text
    assert cancelled.json()["status"] == "failed"
    assert "cancelled by request" in cancelled.json()["error"]

    task = wait_for_task(client, job_id, timeout=60)
    assert task["status"] == "failed" and "cancelled by request" in task["error"]
    # The worker stopped within a few pages of the request, far from the end of the scan.
    stopped_at = server.eagle.repositories.tasks.get(job_id).progress_current
    assert stopped_at < PAGES // 2
    document_id = str(task["document_id"])
    document = client.get(f"/documents/{document_id}").json()
    assert document["status"] == "failed" and "cancelled" in document["error"]
    assert client.get(f"/documents/{document_id}/chunks").json()["chunks"] == []
    again = client.post(f"/tasks/{job_id}/cancel")
    assert again.status_code == 409 and "failed" in again.json()["message"]


def test_a_finished_or_unknown_task_cannot_be_cancelled(
    server: RunningServer, client: httpx.Client
) -> None:
    done = wait_for_task(client, _submit(client, "note.txt", b"A short note on forklifts."))
    assert done["status"] == "completed"
    refused = client.post(f"/tasks/{done['job_id']}/cancel")
    assert refused.status_code == 409 and "completed" in refused.json()["message"]
    assert client.post("/tasks/no-such-task/cancel").status_code == 404
