"""The production topology, run for real: two API processes and two Celery workers sharing
PostgreSQL, Redis, an S3 API server and a Milvus server (deploy/topology.py starts it all)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from deploy.topology import Topology, topology

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCS = {
    "inverter.md": b"# Inverter\n\nThe inverter is wired to bus bar seven through a 40 A fuse.",
    "pump.md": b"# Pump\n\nThe coolant pump runs at 2900 rpm and is serviced every spring.",
    "valve.md": b"# Valve\n\nThe relief valve opens at twelve bar of line pressure.",
}


@pytest.fixture(scope="module")
def deployed() -> Iterator[Topology]:
    with topology(apis=2, workers=2) as running:
        yield running


def _wait_done(url: str, job_id: str, deployed: Topology, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task: dict[str, Any] = httpx.get(f"{url}/tasks/{job_id}", timeout=10).json()
        if task["status"] in ("completed", "failed"):
            return task
        time.sleep(0.3)
    raise AssertionError(f"task {job_id} did not finish\n{deployed.logs()}")


def _search(url: str, query: str) -> list[dict[str, Any]]:
    response = httpx.post(f"{url}/search", json={"query": query, "kb_name": "plant"}, timeout=30)
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["sources"]["text"]
    return hits


def _json_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith('{"ts"')]


def _stream_events(url: str, job_id: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    name = "message"
    with httpx.stream("GET", f"{url}/tasks/{job_id}/stream", timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line[5:])))
                if name in ("done", "error"):
                    break
    return events


def test_two_apis_and_two_workers_share_every_store(deployed: Topology) -> None:
    first, second = deployed.api_urls
    created = httpx.post(f"{first}/knowledge_bases", json={"kb_name": "plant"}, timeout=30)
    assert created.status_code == 201, created.text
    # The KB made through API 1 is visible through API 2 (one metadata database).
    assert httpx.get(f"{second}/knowledge_bases/plant", timeout=10).status_code == 200

    jobs = {}
    for name, body in DOCS.items():
        response = httpx.post(
            f"{first}/ingest",
            data={"kb_name": "plant"},
            files={"file": (name, body, "text/markdown")},
            timeout=30,
        )
        assert response.status_code == 202, response.text
        jobs[name] = response.json()

    # API 2 streams the progress of a task that API 1 accepted and a worker runs.
    events = _stream_events(second, jobs["pump.md"]["job_id"])
    assert events[-1][0] == "done", events
    assert events[-1][1]["status"] == "completed", (events, deployed.logs())
    for submitted in jobs.values():
        on_second = _wait_done(second, submitted["job_id"], deployed)
        on_first = httpx.get(f"{first}/tasks/{submitted['job_id']}", timeout=10).json()
        assert on_second["status"] == on_first["status"] == "completed", on_second
        assert on_first["progress"] == on_second["progress"]

    # Both workers took part: the broker spread the three tasks (prefetch 1, solo pools).
    ran = [w for w in deployed.workers if "succeeded" in w.tail(200_000)]
    assert len(ran) == 2, deployed.logs()
    # The production profile logs JSON lines; a worker's lines name the task they belong to.
    logged = {
        entry.get("task_id")
        for worker in deployed.workers
        for entry in map(json.loads, _json_lines(worker.tail(200_000)))
    }
    assert {job["job_id"] for job in jobs.values()} <= logged

    # Ingested through API 1, found through API 2 (the Milvus server and the S3 originals).
    hits = _search(second, "relief valve pressure")
    assert hits and hits[0]["filename"] == "valve.md", hits
    valve_id = jobs["valve.md"]["document_id"]
    original = httpx.get(f"{second}/documents/{valve_id}/file", timeout=10)
    assert original.content == DOCS["valve.md"]

    # A delete through API 2 is seen by API 1: catalog, vectors and the stored original.
    deleted = httpx.delete(f"{second}/documents/{valve_id}", timeout=30)
    assert deleted.status_code == 200, deleted.text
    assert httpx.get(f"{first}/documents/{valve_id}", timeout=10).status_code == 404
    assert all(hit["document_id"] != valve_id for hit in _search(first, "relief valve pressure"))
    assert httpx.get(f"{first}/documents/{valve_id}/file", timeout=10).status_code == 404
    kb = httpx.get(f"{first}/knowledge_bases/plant", timeout=10).json()
    assert kb["documents"] == 2


def test_an_api_process_killed_after_accepting_loses_nothing(deployed: Topology) -> None:
    first, second = deployed.api_urls
    httpx.post(f"{first}/knowledge_bases", json={"kb_name": "late"}, timeout=30)
    response = httpx.post(
        f"{first}/ingest",
        data={"kb_name": "late"},
        files={"file": ("late.md", b"# Late\n\nAccepted just before the crash.", "text/plain")},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    deployed.apis[0].kill()  # SIGKILL: the accepted task lives in PostgreSQL and the broker
    task = _wait_done(second, response.json()["job_id"], deployed)
    assert task["status"] == "completed", task
    found = httpx.post(
        f"{second}/search", json={"query": "accepted crash", "kb_name": "late"}, timeout=30
    ).json()["sources"]["text"]
    assert [hit["filename"] for hit in found] == ["late.md"]


def _long_document(sections: int = 240) -> bytes:
    """Enough chunks that embedding them takes a while: a worker can be killed mid-task."""
    words = [
        "coolant",
        "pump",
        "valve",
        "relay",
        "breaker",
        "sensor",
        "meter",
        "cable",
        "turbine",
        "gearbox",
    ]
    parts = [
        f"## Section {n}\n\n"
        + " ".join(words[(n + i) % len(words)] for i in range(90))
        + f" checkpoint {n}.\n"
        for n in range(sections)
    ]
    return ("# Service log\n\n" + "\n".join(parts)).encode()


def _holder(deployed: Topology, job_id: str, timeout: float = 120) -> str:
    """The lease owner (``host:pid:nonce``) of a task once a worker is running it."""
    from sqlalchemy import create_engine, text

    engine = create_engine(deployed.env["EAGLE_DATABASE_URL"])
    query = text("SELECT status, lease_owner FROM tasks WHERE id = :id")
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                status, owner = connection.execute(query, {"id": job_id}).one()
            if status == "processing" and owner:
                return str(owner)
            if status in ("completed", "failed"):
                raise AssertionError(f"the task ended ({status}) before a worker could be killed")
            time.sleep(0.05)
    finally:
        engine.dispose()
    raise AssertionError(f"no worker took task {job_id}\n{deployed.logs()}")


def test_a_worker_killed_mid_task_loses_nothing(deployed: Topology) -> None:
    # Runs last: API 1 may have been killed above; one worker is killed here.
    url = deployed.api_urls[-1]
    httpx.post(f"{url}/knowledge_bases", json={"kb_name": "survivor"}, timeout=30)
    response = httpx.post(
        f"{url}/ingest",
        data={"kb_name": "survivor"},
        files={"file": ("service-log.md", _long_document(), "text/markdown")},
        timeout=60,
    )
    assert response.status_code == 202, response.text
    job = response.json()
    pid = int(_holder(deployed, job["job_id"]).split(":")[1])
    [victim] = [w for w in deployed.workers if w.popen.pid == pid]
    victim.kill()  # SIGKILL mid-task: no cleanup, no release of its lease, message unacked

    # The surviving worker's recovery sees the holder is gone and runs the task again.
    task = _wait_done(url, job["job_id"], deployed, timeout=240)
    assert task["status"] == "completed", (task, deployed.logs())
    assert task["attempts"] >= 2, task
    survivors = [w for w in deployed.workers if w.alive()]
    assert survivors and victim not in survivors
    document = httpx.get(f"{url}/documents/{job['document_id']}", timeout=10).json()
    chunks = httpx.get(f"{url}/documents/{job['document_id']}/chunks", timeout=30).json()
    # Every chunk once: the killed attempt's partial rows were replaced, not doubled.
    assert chunks["count"] == document["chunk_count"] > 0
    assert len({c["chunk_id"] for c in chunks["chunks"]}) == chunks["count"]
    found = httpx.post(
        f"{url}/search", json={"query": "checkpoint 17", "kb_name": "survivor"}, timeout=30
    ).json()["sources"]["text"]
    assert found and found[0]["document_id"] == job["document_id"]
