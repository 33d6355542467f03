"""API defects of issue 14: a restricted key's pages are full pages; streams always end; errors
that used to be bare 500s carry their status and Retry-After."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from eagle_rag.api.errors import error_response
from eagle_rag.db.tables import utcnow
from eagle_rag.errors import BackendUnavailableError, EagleError, HookInvocationError
from tests.api.server import RunningServer, running_server, sse_events, wait_for_task

ADMIN, SCOPED = "admin-key-issue14", "scoped-key-issue14"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [
        {"name": "admin", "key": ADMIN},
        {"name": "agent", "key": SCOPED, "kb_names": ["kb-b", "kb-d"]},
    ]
    with running_server(
        tmp_path_factory.mktemp("reliability-api"),
        server={"api_keys": keys, "rate_limit_per_minute": 0},
    ) as running:
        admin = running.client(Authorization=f"Bearer {ADMIN}")
        for kb in ("kb-a", "kb-b", "kb-c", "kb-d", "kb-e"):
            assert admin.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
        jobs = []
        for kb, n in (("kb-a", 1), ("kb-d", 4), ("kb-a", 2), ("kb-a", 3)):
            answer = admin.post(
                "/ingest",
                data={"kb_name": kb},
                files={"file": (f"d{n}.txt", f"document number {n}".encode(), "text/plain")},
            )
            assert answer.status_code == 202, answer.text
            jobs.append(answer.json()["job_id"])
        for job in jobs:
            assert wait_for_task(admin, job)["status"] == "completed"
        yield running


def test_a_restricted_key_gets_full_pages_of_its_kbs(secured: RunningServer) -> None:
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    first = agent.get("/knowledge_bases", params={"limit": 1}).json()
    second = agent.get("/knowledge_bases", params={"limit": 1, "offset": 1}).json()
    assert [kb["kb_name"] for kb in first + second] == ["kb-b", "kb-d"]
    documents = agent.get("/documents", params={"limit": 1}).json()
    assert [d["kb_name"] for d in documents] == ["kb-d"]  # kb-a's first came before it
    tasks = agent.get("/tasks", params={"limit": 1}).json()
    assert [t["kb_name"] for t in tasks] == ["kb-d"]


def test_a_stream_ends_with_an_error_event_when_its_task_disappears(
    secured: RunningServer,
) -> None:
    app = secured.eagle
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    document = admin.get("/documents", params={"kb_name": "kb-a", "limit": 1}).json()[0]
    accepted = app.repositories.ingest_runs.accept(
        document_id=uuid.uuid4().hex,
        kb_name="kb-c",
        filename="never.txt",
        mime_type="text/plain",
        sha256=uuid.uuid4().hex * 2,
        size=3,
        object_key=app.repositories.documents.get(document["document_id"]).object_key,
        lease_owner="another-host:1:busy",  # held elsewhere: it stays queued here
        lease_until=utcnow() + timedelta(hours=1),
    )
    events: list[tuple[str, str]] = []

    def listen() -> None:
        with admin.stream("GET", f"/tasks/{accepted.task.id}/stream") as response:
            events.extend(sse_events(response))

    listener = threading.Thread(target=listen)
    listener.start()
    while not events:
        listener.join(0.05)
    assert events[0][0] == "progress"
    assert admin.delete(f"/documents/{accepted.document.id}").status_code == 200
    listener.join(timeout=10)
    assert not listener.is_alive()
    name, data = events[-1]
    assert name == "error" and json.loads(data)["code"] == "not_found"


@pytest.mark.parametrize(
    ("error", "status", "retry_after"),
    [
        (BackendUnavailableError("milvus is down", backend="milvus"), 503, "5"),
        (BackendUnavailableError("queue stopped", retry_after=2), 503, "2"),
        (EagleError("no subscriber embedded the query"), 503, "5"),
        (HookInvocationError("a plugin raised", plugin="p", hook="PARSE"), 502, None),
    ],
)
def test_errors_map_to_their_status_with_retry_after(
    error: EagleError, status: int, retry_after: str | None
) -> None:
    response = error_response(error)
    assert response.status_code == status
    assert response.headers.get("retry-after") == retry_after
    body: dict[str, Any] = json.loads(bytes(response.body))
    assert body["code"] == error.code and body["message"] == error.message
