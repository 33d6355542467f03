"""A Celery worker's own Prometheus endpoint (``worker.metrics_port``): a real worker process on
Redis, PostgreSQL and a Milvus server ingests a document, and its endpoint -- served by the
worker's main process -- shows that ingest's phases, embedder calls and hook calls, also when a
prefork pool child ran the task."""

from __future__ import annotations

import asyncio
import io
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from eagle_rag.bootstrap import bootstrap
from eagle_rag.ingest.celery_app import CeleryQueue
from eagle_rag.settings import load_settings
from tests.ingest.celery_setup import celery_environment
from tests.servers import free_port

pytestmark = pytest.mark.integration
BROKER = "redis://127.0.0.1:6379/14"
BODY = b"# Pump\n\nThe pump runs at dawn.\n\n## Valve\n\nThe valve closes at dusk.\n"
Samples = Mapping[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def environment(tmp_path: Path, postgres_url: str, milvus_uri: str) -> dict[str, str]:
    return celery_environment(
        tmp_path,
        postgres_url,
        milvus_uri,
        BROKER,
        EAGLE_RAG_WORKER__METRICS_PORT=str(free_port()),
        EAGLE_RAG_WORKER__METRICS_DIR=str(tmp_path / "worker-metrics"),
    )


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def scrape(url: str, worker: subprocess.Popen[bytes], log: Path) -> Samples:
    """The worker's exposition (waiting for the endpoint to come up), parsed."""
    deadline = time.monotonic() + 90
    with httpx.Client(timeout=5) as client:
        while True:
            assert worker.poll() is None, log.read_text()
            try:
                text = client.get(url).raise_for_status().text
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no worker metrics endpoint\n{log.read_text()}") from None
                time.sleep(0.3)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.parametrize("worker", ["prefork", "solo"], indirect=True)
async def test_a_celery_worker_serves_the_metrics_of_the_ingest_it_ran(
    environment: dict[str, str], worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    url = f"http://127.0.0.1:{environment['EAGLE_RAG_WORKER__METRICS_PORT']}/metrics"
    before = await asyncio.to_thread(scrape, url, worker, log)
    app = await bootstrap(load_settings(environment))
    try:
        assert isinstance(app.queue, CeleryQueue)
        kb = f"metered-{uuid.uuid4().hex[:8]}"
        app.repositories.knowledge_bases.create(kb)
        job = app.ingest.submit_file(kb_name=kb, filename="pump.md", stream=io.BytesIO(BODY))
        deadline = time.monotonic() + 90
        while app.repositories.tasks.get(job.job_id).status not in ("completed", "failed"):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            await asyncio.sleep(0.3)
        assert app.repositories.tasks.get(job.job_id).status == "completed", log.read_text()
        chunks = app.repositories.documents.get(job.document_id).chunk_count
    finally:
        await app.stop()
    after = await asyncio.to_thread(scrape, url, worker, log)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("eagle_ingest_phase_seconds_count", phase="ingest", outcome="ok") == 1
    assert moved("eagle_ingest_phase_seconds_sum", phase="ingest", outcome="ok") > 0
    for phase in ("parse", "chunk", "embed", "upsert"):
        assert moved("eagle_ingest_phase_seconds_count", phase=phase, outcome="ok") >= 1, phase
    assert moved("eagle_model_call_seconds_count", model="embedder", outcome="ok") >= 1
    assert moved("eagle_hook_calls_total", plugin="core", hook="EMBED_TEXT", outcome="ok") >= 1
    assert moved("eagle_ingested_documents_total") == 1
    assert moved("eagle_ingested_chunks_total") == chunks > 0
    assert moved("eagle_ingested_bytes_total") == len(BODY)
    # Where the numbers came from: with prefork, a child's file (not the main process's).
    writers = {int(p.stem.rsplit("_", 1)[1]) for p in (tmp_path / "worker-metrics").glob("*.db")}
    if worker.args and "--pool=prefork" in worker.args:
        assert writers and worker.pid not in writers
    else:
        assert writers == {worker.pid}


@pytest.fixture
def taken_port(environment: dict[str, str]) -> Iterator[socket.socket]:
    """Something else listens on the worker's metrics port before the worker starts."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", int(environment["EAGLE_RAG_WORKER__METRICS_PORT"])))
        holder.listen()
        yield holder


async def test_a_worker_whose_metrics_port_is_taken_says_so_and_ingests_on(
    environment: dict[str, str],
    taken_port: socket.socket,
    worker: subprocess.Popen[bytes],
    tmp_path: Path,
) -> None:
    log = tmp_path / "worker.log"
    app = await bootstrap(load_settings(environment))
    try:
        kb = f"unmetered-{uuid.uuid4().hex[:8]}"
        app.repositories.knowledge_bases.create(kb)
        job = app.ingest.submit_file(kb_name=kb, filename="pump.md", stream=io.BytesIO(BODY))
        deadline = time.monotonic() + 90
        while app.repositories.tasks.get(job.job_id).status not in ("completed", "failed"):
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
            await asyncio.sleep(0.3)
        assert app.repositories.tasks.get(job.job_id).status == "completed"
    finally:
        await app.stop()
    output = await asyncio.to_thread(log.read_text)
    port = environment["EAGLE_RAG_WORKER__METRICS_PORT"]
    assert f"worker metrics are off: worker.metrics_port: cannot listen on 127.0.0.1:{port}" in (
        output
    )
