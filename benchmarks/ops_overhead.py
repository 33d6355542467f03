"""What metrics + tracing add to `/search` latency: instrumented vs bare, in the same run.

Two real ASGI apps under uvicorn on 127.0.0.1, in one process and one event loop, each with its
own embedded stores holding the same BEIR corpus (default msmarco):

- bare: tracing off, and the metrics middleware and stage observer taken out;
- instrumented: the Prometheus middleware and observers, and OpenTelemetry tracing on with the
  OTLP/HTTP exporter sending every span to a local receiver (batched, as in production).

Every query goes to both, one after the other, the order alternating, so machine load hits both
alike; p50 and p95 of each and the instrumented/bare ratio are printed (bar: p50 ratio <= 1.05).

    .venv/bin/python -m benchmarks.ops_overhead ../shared/datasets/msmarco --limit 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import io
import os
import platform
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from eagle_rag.api.app import create_app
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.metrics import percentile
from eagle_rag.settings import load_settings

KB = "bench"


@contextlib.contextmanager
def otlp_receiver() -> Iterator[tuple[str, dict[str, int]]]:
    """A local OTLP/HTTP endpoint that accepts every export and counts requests and bytes."""
    seen = {"requests": 0, "bytes": 0}

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            seen["requests"] += 1
            seen["bytes"] += len(body)
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", seen
    finally:
        server.shutdown()
        server.server_close()


def strip_instrumentation(api: FastAPI) -> None:
    """The bare arm: no metrics middleware, no stage observer (tracing is off in its settings)."""
    metrics = api.state.metrics
    api.user_middleware = [
        m for m in api.user_middleware if m.kwargs.get("dispatch") != metrics.middleware
    ]
    eagle = api.state.eagle
    eagle.bus.tracing.remove_observer(eagle.stage_metrics)


@contextlib.asynccontextmanager
async def serving(data: str, port: int, tracing: dict[str, Any] | None) -> AsyncIterator[Any]:
    overrides: dict[str, Any] = {"server": {"port": port}}
    if tracing:
        overrides["telemetry"] = {"tracing": tracing}
    settings = load_settings({**os.environ, "EAGLE_DATA_DIR": data}, overrides=overrides)
    api = create_app(settings)
    if not tracing:
        strip_instrumentation(api)
    server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="error"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110  (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.05)
    try:
        yield api.state.eagle
    finally:
        server.should_exit = True
        await task


async def ingest(eagle: Any, corpus: list[Any]) -> None:
    eagle.repositories.knowledge_bases.create(KB)
    for doc in corpus:
        await asyncio.to_thread(
            eagle.ingest.submit_file,
            kb_name=KB,
            filename=f"{doc.id}.txt",
            stream=io.BytesIO(doc.body.encode()),
        )
    await eagle.queue.join()
    await eagle.flush_vectors()


async def timed_search(http: httpx.AsyncClient, query: str) -> float:
    started = time.perf_counter()
    response = await http.post("/search", json={"query": query, "kb_name": KB, "top_k": 5})
    response.raise_for_status()
    return (time.perf_counter() - started) * 1000


async def measure(urls: dict[str, str], queries: list[str], rounds: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in urls}
    clients = {name: httpx.AsyncClient(base_url=url, timeout=120) for name, url in urls.items()}
    try:
        for name in urls:  # warm both (first-call costs: connections, caches)
            for query in queries[:5]:
                await timed_search(clients[name], query)
        for round_ in range(rounds):
            for i, query in enumerate(queries):
                order = list(urls) if (i + round_) % 2 == 0 else list(reversed(urls))
                for name in order:
                    timings[name].append(await timed_search(clients[name], query))
    finally:
        for client in clients.values():
            await client.aclose()
    return timings


async def run(folder: Path, limit: int, rounds: int, queries_n: int) -> dict[str, Any]:
    dataset = load_dataset(folder)
    corpus = dataset.corpus[:limit] if limit else dataset.corpus
    queries = list(dataset.queries.values())[:queries_n]
    base = 18500 + os.getpid() % 400
    with (
        otlp_receiver() as (endpoint, seen),
        tempfile.TemporaryDirectory(prefix="eagle-ops-bare-") as bare_dir,
        tempfile.TemporaryDirectory(prefix="eagle-ops-on-") as on_dir,
    ):
        tracing = {"enabled": True, "exporter": "otlp", "endpoint": endpoint}
        async with (
            serving(bare_dir, base, None) as bare,
            serving(on_dir, base + 1, tracing) as instrumented,
        ):
            started = time.perf_counter()
            await ingest(bare, corpus)
            await ingest(instrumented, corpus)
            ingest_s = time.perf_counter() - started
            urls = {
                "bare": f"http://127.0.0.1:{base}",
                "instrumented": f"http://127.0.0.1:{base + 1}",
            }
            timings = await measure(urls, queries, rounds)
            encoder = bare.text_encoder.name
        await asyncio.sleep(0.5)  # the exporter's last batch went out at shutdown
    return {
        "documents": len(corpus),
        "queries": len(queries),
        "ingest_s": ingest_s,
        "timings": timings,
        "encoder": encoder,
        "exports": dict(seen),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--limit", type=int, default=200, help="corpus documents (0 = all)")
    parser.add_argument("--queries", type=int, default=100, help="distinct queries")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries")
    args = parser.parse_args()
    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} cores")
    r = asyncio.run(run(args.dataset, args.limit, args.rounds, args.queries))
    print(
        f"{r['documents']} documents per app (ingest {r['ingest_s']:.0f} s for both); "
        f"{r['queries']} queries x {args.rounds} rounds, sequential, interleaved; "
        f"encoder {r['encoder']}; OTLP receiver got {r['exports']['requests']} exports, "
        f"{r['exports']['bytes']} bytes"
    )
    p50 = {name: percentile(v, 50) for name, v in r["timings"].items()}
    p95 = {name: percentile(v, 95) for name, v in r["timings"].items()}
    for name in ("bare", "instrumented"):
        print(f"/search {name:13} p50 {p50[name]:7.2f} ms  p95 {p95[name]:7.2f} ms")
    ratio = p50["instrumented"] / p50["bare"]
    verdict = "met" if ratio <= 1.05 else "NOT met"
    print(f"instrumented / bare: p50 {ratio:.3f}  p95 {p95['instrumented'] / p95['bare']:.3f}")
    print(f"bar p50 ratio <= 1.05: {verdict}")


if __name__ == "__main__":
    main()
