"""REST latency under concurrency, and what the HTTP layer adds over in-process calls.

One run, embedded default (temporary data dir): ingest a BEIR corpus (default msmarco), start the
real ASGI app under uvicorn on 127.0.0.1, then for `/search` and `/query` (extractive answers):

- in-process: 8 concurrent workers call `RetrievalService.search` / `AnswerEngine.answer`;
- over HTTP: 8 concurrent clients POST the same requests to the server;

and print p50/p95 of each and the HTTP/in-process ratio. Both sides run in the same event loop
and process, interleaved in rounds, so machine load hits them alike.

    .venv/bin/python -m benchmarks.api_latency ../shared/datasets/msmarco
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import os
import platform
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from eagle_rag.api.app import create_app
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.metrics import percentile
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings

CLIENTS = 8
KB = "bench"


async def concurrently(
    calls: list[Callable[[], Awaitable[Any]]], clients: int = CLIENTS
) -> list[float]:
    """Run ``calls`` with ``clients`` workers; latency of each call in ms."""
    queue = list(reversed(calls))
    timings: list[float] = []

    async def worker() -> None:
        while queue:
            call = queue.pop()
            started = time.perf_counter()
            await call()
            timings.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(worker() for _ in range(clients)))
    return timings


async def run(folder: Path, limit: int, rounds: int) -> dict[str, Any]:
    dataset = load_dataset(folder)
    corpus = dataset.corpus[:limit] if limit else dataset.corpus
    queries = list(dataset.queries.values())
    with tempfile.TemporaryDirectory(prefix="eagle-api-bench-") as data:
        port = 18000 + os.getpid() % 1000
        settings = load_settings(
            {**os.environ, "EAGLE_DATA_DIR": data}, overrides={"server": {"port": port}}
        )
        api = create_app(settings)
        server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="error"))
        serving = asyncio.create_task(server.serve())
        # uvicorn offers a flag, not an event, for "listening".
        while not server.started:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        eagle = api.state.eagle
        try:
            eagle.repositories.knowledge_bases.create(KB)
            started = time.perf_counter()
            for doc in corpus:
                await asyncio.to_thread(
                    eagle.ingest.submit_file,
                    kb_name=KB,
                    filename=f"{doc.id}.txt",
                    stream=io.BytesIO(doc.body.encode()),
                )
            await eagle.queue.join()
            await eagle.flush_vectors()
            ingest_s = time.perf_counter() - started

            results: dict[str, list[float]] = {}
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
                for _ in range(rounds):
                    for name, local, remote in _pairs(eagle, http, queries):
                        results.setdefault(f"{name} in-process", []).extend(
                            await concurrently(local)
                        )
                        results.setdefault(f"{name} http", []).extend(await concurrently(remote))
        finally:
            server.should_exit = True
            await serving
    return {
        "documents": len(corpus),
        "queries": len(queries),
        "ingest_s": ingest_s,
        "p50": {k: percentile(v, 50) for k, v in results.items()},
        "p95": {k: percentile(v, 95) for k, v in results.items()},
        "encoder": eagle.text_encoder.name,
    }


def _pairs(eagle: Any, http: httpx.AsyncClient, queries: list[str]) -> list[Any]:
    def search_local(q: str) -> Callable[[], Awaitable[Any]]:
        return lambda: eagle.retrieval.search(QueryRequest(q, kb_names=(KB,), top_k=5))

    def search_http(q: str) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            response = await http.post("/search", json={"query": q, "kb_name": KB, "top_k": 5})
            response.raise_for_status()

        return call

    def query_local(q: str) -> Callable[[], Awaitable[Any]]:
        return lambda: eagle.answers.answer(eagle.answers.request(q, kb_names=(KB,)))

    def query_http(q: str) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            response = await http.post("/query", json={"query": q, "kb_name": KB})
            response.raise_for_status()

        return call

    return [
        ("/search", [search_local(q) for q in queries], [search_http(q) for q in queries]),
        ("/query", [query_local(q) for q in queries], [query_http(q) for q in queries]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="corpus documents (0 = all)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries")
    args = parser.parse_args()
    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} cores")
    r = asyncio.run(run(args.dataset, args.limit, args.rounds))
    print(
        f"{r['documents']} documents ingested in {r['ingest_s']:.0f} s; {r['queries']} queries "
        f"x {args.rounds} rounds; {CLIENTS} concurrent clients; encoder {r['encoder']}"
    )
    for route in ("/search", "/query"):
        local, remote = f"{route} in-process", f"{route} http"
        print(
            f"{route:8} in-process p50 {r['p50'][local]:7.1f} ms  p95 {r['p95'][local]:7.1f} ms | "
            f"http p50 {r['p50'][remote]:7.1f} ms  p95 {r['p95'][remote]:7.1f} ms | "
            f"http / in-process p50 {r['p50'][remote] / r['p50'][local]:.2f}"
        )


if __name__ == "__main__":
    main()
