"""Ingest speed-up from a second Celery worker, with the embedder as a remote endpoint.

The production topology (deploy/topology.py: API, PostgreSQL, Redis, moto S3, milvus-lite
server) runs with the OpenAI-compatible embedder pointed at a local embeddings server that
sleeps a fixed time per request and returns distinct deterministic vectors, so the embedder's
latency, not this machine's cores, is what a second worker can overlap. The same documents go
through 1 worker, then (after a second worker starts) through 2, in the same run.

    .venv/bin/python -m benchmarks.workers_speedup [--docs 200] [--latency-ms 250]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import struct
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from prometheus_client.parser import text_string_to_metric_families

from deploy.topology import Topology, topology

DIM = 384
UPLOADERS = 4  # concurrent upload requests
WORDS = [
    "inverter",
    "pump",
    "valve",
    "relay",
    "breaker",
    "sensor",
    "meter",
    "cable",
    "turbine",
    "gearbox",
    "fan",
    "filter",
]


def vector(text: str) -> list[float]:
    """A deterministic unit-ish vector per text: SHA-256 stretched to DIM floats."""
    out: list[float] = []
    counter = 0
    while len(out) < DIM:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        out.extend(b / 127.5 - 1.0 for b in struct.unpack("32B", digest))
        counter += 1
    return out[:DIM]


@contextmanager
def embeddings_server(latency_s: float) -> Iterator[str]:
    """An OpenAI-compatible ``/v1/embeddings`` that takes ``latency_s`` per request."""

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            time.sleep(latency_s)
            data = [
                {"object": "embedding", "index": i, "embedding": vector(text)}
                for i, text in enumerate(body["input"])
            ]
            payload = json.dumps({"object": "list", "data": data, "model": body["model"]})
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def document(number: int, tag: str) -> bytes:
    words = [WORDS[(number * 7 + i) % len(WORDS)] for i in range(60)]
    return f"# Note {tag} {number}\n\n{' '.join(words)} number {number}.\n".encode()


def ingest(running: Topology, kb: str, count: int) -> tuple[float, float]:
    """Submit ``count`` documents to ``kb``; return the seconds until all completed, and the
    seconds the uploads took (UPLOADERS at a time, like several clients: one client's
    sequential uploads capped what two workers could be given on this machine)."""
    url = running.api_urls[0]
    with httpx.Client(base_url=url, timeout=60) as client:
        client.post("/knowledge_bases", json={"kb_name": kb})

        def upload(n: int) -> str:
            files = {"file": (f"{kb}-{n}.md", document(n, kb), "text/markdown")}
            response = client.post("/ingest", data={"kb_name": kb}, files=files)
            return str(response.raise_for_status().json()["job_id"])

        started = time.perf_counter()
        with ThreadPoolExecutor(UPLOADERS) as pool:
            jobs = list(pool.map(upload, range(count)))
        uploaded = time.perf_counter() - started
        wait_for(client, jobs, running)
        return time.perf_counter() - started, uploaded


def wait_for(client: httpx.Client, jobs: list[str], running: Topology) -> None:
    """Wait until every job completed, reading only the oldest jobs not yet seen completed.

    Listing all ``count`` tasks twice a second (what this did before) had the API serialise up
    to 1,000 rows per poll on the cores the workers share, a cost that grew with ``--docs``.
    Jobs complete roughly in the order sent, so each poll mostly reads one or two tasks.
    """
    pending = list(jobs)
    while pending:
        time.sleep(0.5)
        while pending:
            task = client.get(f"/tasks/{pending[0]}").raise_for_status().json()
            if task["status"] == "failed":
                raise RuntimeError(f"ingest failed: {task['error']}\n{running.logs()}")
            if task["status"] != "completed":
                break
            pending.pop(0)


PhaseTotals = dict[str, tuple[float, float]]


def phase_totals(running: Topology) -> PhaseTotals:
    """(seconds, documents) per ingest phase, summed over every worker's own endpoint."""
    totals: PhaseTotals = {}
    for url in running.worker_metrics_urls:
        for family in text_string_to_metric_families(httpx.get(url, timeout=30).text):
            if family.name != "eagle_ingest_phase_seconds":
                continue
            for sample in family.samples:
                if sample.labels.get("outcome") != "ok" or sample.name.endswith("_bucket"):
                    continue
                seconds, count = totals.get(sample.labels["phase"], (0.0, 0.0))
                if sample.name.endswith("_sum"):
                    seconds += sample.value
                else:
                    count += sample.value
                totals[sample.labels["phase"]] = (seconds, count)
    return totals


def describe_phases(before: PhaseTotals, after: PhaseTotals) -> str:
    """Mean milliseconds per document in each phase between two scrapes (where time went)."""
    parts = []
    for phase, (seconds, count) in sorted(after.items()):
        old_seconds, old_count = before.get(phase, (0.0, 0.0))
        if count > old_count:
            parts.append(f"{phase} {1000 * (seconds - old_seconds) / (count - old_count):.0f}")
    return "ms per document in each phase (workers' /metrics): " + ", ".join(parts)


def describe_footprint(running: Topology) -> str:
    """Resident memory of each process and the Milvus data per stored chunk, after ingest."""
    with httpx.Client(base_url=running.api_urls[0], timeout=60) as client:
        metrics = client.get("/metrics").text
    chunks = next(
        float(line.split()[1])
        for line in metrics.splitlines()
        if line.startswith("eagle_ingest_chunks ")
    )
    milvus_dir = running.root / "milvus"
    milvus_bytes = sum(p.stat().st_size for p in milvus_dir.rglob("*") if p.is_file())
    processes = [running.apis[0], running.workers[0], *running.services]
    rss = ", ".join(f"{p.name} {p.rss_bytes() / 2**20:.0f} MiB" for p in processes)
    per_chunk = milvus_bytes / max(chunks, 1)
    return (
        f"footprint: {int(chunks)} chunks; RSS {rss}; milvus data {per_chunk / 1024:.1f} KiB/chunk"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=250.0)
    args = parser.parse_args()
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {os.cpu_count()} CPUs · "
        f"Python {platform.python_version()} · {args.docs} documents · embedder latency "
        f"{args.latency_ms:.0f} ms per request"
    )
    with embeddings_server(args.latency_ms / 1000) as base_url:
        env = {
            "EAGLE_EMBEDDING_PROVIDER": "openai",
            "EAGLE_EMBEDDING_BASE_URL": base_url,
            "EAGLE_EMBEDDING_MODEL": "fixed-latency",
            "EAGLE_EMBEDDING_DIM": str(DIM),
            "EAGLE_RAG_MILVUS__TEXT_DIM": str(DIM),
        }
        with topology(apis=1, workers=1, extra_env=env) as running:
            ingest(running, "warm-one", 2)  # the worker's first task bootstraps its app
            start = phase_totals(running)
            one, one_uploads = ingest(running, "one-worker", args.docs)
            one_phases = describe_phases(start, phase_totals(running))
            running.start_worker()
            ingest(running, "warm-two", 4)
            start = phase_totals(running)
            two, two_uploads = ingest(running, "two-workers", args.docs)
            two_phases = describe_phases(start, phase_totals(running))
            footprint = describe_footprint(running)
    print(f"1 worker : {one:7.1f} s  {args.docs / one:6.2f} docs/s  (uploads {one_uploads:.1f} s)")
    print(f"2 workers: {two:7.1f} s  {args.docs / two:6.2f} docs/s  (uploads {two_uploads:.1f} s)")
    print(f"speed-up : {one / two:.2f}x  (target >= 1.6x with an endpoint embedder)")
    print(f"1 worker : {one_phases}")
    print(f"2 workers: {two_phases}")
    print(footprint)


if __name__ == "__main__":
    main()
