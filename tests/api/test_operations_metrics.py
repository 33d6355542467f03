"""Each metric of docs/operations.md, driven by real requests and read back from /metrics."""

from __future__ import annotations

import gc
import re
import weakref
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from eagle_rag.api.app import create_app
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import QueryRequest
from tests.api.server import RunningServer, running_server, wait_for_task


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("metrics")) as running:
        yield running


def scrape(client: httpx.Client | TestClient) -> dict[str, float]:
    """Every sample of the exposition as ``name{labels}`` -> value."""
    text = client.get("/metrics").text
    samples = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if match:
            samples[match.group(1)] = float(match.group(2))
    return samples


def test_ingest_metrics_count_documents_chunks_bytes_and_tasks(server: RunningServer) -> None:
    body = b"# Meter\n\nThe meter reports every fifteen minutes.\n\n## Note\n\nKeep it dry.\n"
    with httpx.Client(base_url=server.url, timeout=30) as client:
        before = scrape(client)
        client.post("/knowledge_bases", json={"kb_name": "metered"})
        job = client.post(
            "/ingest", data={"kb_name": "metered"}, files={"file": ("m.md", body, "text/plain")}
        ).json()
        task = wait_for_task(client, job["job_id"])
        assert task["status"] == "completed"
        after = scrape(client)
    documents = 'eagle_ingest_documents{status="completed"}'
    assert after[documents] == before.get(documents, 0) + 1
    assert after["eagle_ingest_bytes"] == before.get("eagle_ingest_bytes", 0) + len(body)
    assert after["eagle_ingest_chunks"] > before.get("eagle_ingest_chunks", 0)
    tasks = 'eagle_ingest_tasks{status="completed"}'
    assert after[tasks] == before.get(tasks, 0) + 1
    assert after["eagle_ingest_queue_depth"] == 0  # nothing waits once the task ran
    # Counted by the process that ran the ingest (here the API's in-process queue).
    assert (
        after["eagle_ingested_documents_total"]
        == before.get("eagle_ingested_documents_total", 0) + 1
    )
    assert after["eagle_ingested_bytes_total"] == before.get("eagle_ingested_bytes_total", 0) + len(
        body
    )
    chunks = after["eagle_ingested_chunks_total"] - before.get("eagle_ingested_chunks_total", 0)
    assert chunks == after["eagle_ingest_chunks"] - before.get("eagle_ingest_chunks", 0)


def test_search_and_answer_counts_and_request_latency(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        before = scrape(client)
        assert client.post("/search", json={"query": "meter", "kb_name": "metered"}).is_success
        assert client.post("/query", json={"query": "meter?", "kb_name": "metered"}).is_success
        refused = client.post("/search", json={"query": "", "kb_name": "metered"})
        assert refused.status_code == 422
        after = scrape(client)
    ok = 'eagle_searches_total{status="2xx",surface="rest"}'
    bad = 'eagle_searches_total{status="4xx",surface="rest"}'
    answers = 'eagle_answers_total{status="2xx",surface="rest"}'
    assert after[ok] == before.get(ok, 0) + 1
    assert after[bad] == before.get(bad, 0) + 1
    assert after[answers] == before.get(answers, 0) + 1
    latency = 'eagle_http_request_seconds_count{method="POST",route="/search",status="2xx"}'
    assert after[latency] == before.get(latency, 0) + 1


def test_a_failing_hook_subscriber_is_counted_by_plugin_and_hook(server: RunningServer) -> None:
    def broken(query: QueryRequest) -> None:
        raise RuntimeError("plugin bug")

    eagle = server.api.state.eagle
    eagle.bus.subscribe(hooks.classify_query, broken, plugin="flaky")
    key = f'eagle_hook_failures_total{{hook="{hooks.classify_query.name}",plugin="flaky"}}'
    decisions = (
        'eagle_plugin_decisions_total{category="hook_failure",decision="skipped",plugin="flaky"}'
    )
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            before = scrape(client)
            for _ in range(2):
                assert client.post("/search", json={"query": "meter"}).is_success
            after = scrape(client)
    finally:
        eagle.bus.unsubscribe_plugin("flaky")
    assert after[key] == before.get(key, 0) + 2
    assert after[decisions] == before.get(decisions, 0) + 2
    assert after['eagle_audit_decisions{category="hook_failure"}'] >= 2


def test_every_response_carries_a_request_id(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        generated = client.get("/health").headers["x-request-id"]
        given = client.get("/health", headers={"X-Request-ID": "trace-42"}).headers
        hostile = client.get("/health", headers={"X-Request-ID": "a b\tc" * 30}).headers
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert given["x-request-id"] == "trace-42"
    assert hostile["x-request-id"] != "a b\tc" * 30  # malformed ids are replaced, not echoed


def test_broker_queue_length_is_read_from_redis(tmp_path: Path) -> None:
    import redis

    broker = "redis://127.0.0.1:6379/12"
    client = redis.Redis.from_url(broker)
    client.delete("eagle_rag_ingest")
    client.rpush("eagle_rag_ingest", b"m1", b"m2", b"m3")
    try:
        with (
            running_server(tmp_path, queue={"backend": "celery", "broker_url": broker}) as running,
            httpx.Client(base_url=running.url, timeout=30) as http,
        ):
            assert scrape(http)["eagle_broker_queue_length"] == 3
    finally:
        client.delete("eagle_rag_ingest")


def test_api_apps_built_on_one_eagle_app_share_its_stage_metrics(server: RunningServer) -> None:
    """An EagleApp reused by several API apps (tests, embedding) counts each stage once, every
    app on it serves those counts, and an API app dropped by its owner is not kept alive."""
    dropped = weakref.ref(create_app(server.settings, eagle=server.eagle).state.metrics)
    gc.collect()
    assert dropped() is None  # the EagleApp holds no observer or audit sink of a dead API app
    ingests = 'eagle_ingest_phase_seconds_count{outcome="ok",phase="ingest"}'
    with httpx.Client(base_url=server.url, timeout=30) as client:
        before = scrape(client).get(ingests, 0)
        client.post("/knowledge_bases", json={"kb_name": "shared-metrics"})
        job = client.post(
            "/ingest",
            data={"kb_name": "shared-metrics"},
            files={"file": ("s.md", b"# Shared\n\nOne ingest, counted once.\n", "text/plain")},
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "completed"
        served = scrape(client)[ingests]
    assert served == before + 1
    # An API app built after the ingest (no lifespan: the EagleApp is already running).
    # An open API answers localhost names only (DNS rebinding), not TestClient's "testserver".
    later = TestClient(create_app(server.settings, eagle=server.eagle), base_url="http://localhost")
    assert scrape(later)[ingests] == served
