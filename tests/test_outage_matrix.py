"""The outage matrix of issue 14: the metadata database (PostgreSQL), Milvus, the embedder
endpoint, the reranker endpoint and the chat model, each taken down and brought back while a
client keeps sending requests.

Each backend is a real server (a throw-away PostgreSQL database, the session's Milvus server,
local HTTP servers speaking the providers' protocols) behind a TCP proxy the test cuts:
connections are refused and open ones reset, as when the backend's process dies. While it is
down every request answers within its timeout with either a 200 (where a fallback exists: BM25
without the embedder, fused order without the reranker) or a 503 + Retry-After naming the
backend; no other 5xx, no hang. After the backend returns the service answers normally within
10 s, with no restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.chat_fakes import sse
from tests.databases import postgres_database
from tests.http_fakes import embeddings_body, json_answer, serve
from tests.outage_proxy import CuttableProxy

pytestmark = [pytest.mark.integration]

DIM = 16
RECOVERY_S = 10.0
DOWN_S = 3.0  # how long each backend stays down while the load runs
# No request may take longer than this, down or not (every backend's timeout is set below it).
REQUEST_BOUND_S = 12.0


@dataclass
class Load:
    """What a background client saw: (sent at, status, seconds); status 0 is no answer."""

    samples: list[tuple[float, int, float]] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)

    def statuses(self) -> set[int]:
        return {status for _, status, _ in self.samples}

    def slowest_s(self) -> float:
        return max((s for _, _, s in self.samples), default=0.0)


@contextmanager
def under_load(call: Callable[[], httpx.Response]) -> Iterator[Load]:
    """``call`` sent back to back from another thread for as long as the block runs."""
    load, stop = Load(), threading.Event()

    def loop() -> None:
        while not stop.is_set():
            sent = time.monotonic()
            try:
                answer = call()
                status = answer.status_code
                if status >= 500 and status != 503:
                    load.bodies.append(answer.text)
            except httpx.HTTPError as exc:
                status = 0
                load.bodies.append(repr(exc))
            load.samples.append((sent, status, time.monotonic() - sent))
            time.sleep(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield load
    finally:
        stop.set()
        thread.join(timeout=REQUEST_BOUND_S * 2)


def assert_outage(answer: httpx.Response, backend: str) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "backend_unavailable", answer.text
    assert answer.json()["details"]["backend"] == backend, answer.text
    assert answer.headers["retry-after"].isdigit()


def recovery_s(call: Callable[[], httpx.Response], ok: Callable[[httpx.Response], bool]) -> float:
    """Seconds until ``call`` answers as it should again (polled every quarter second)."""
    back = time.monotonic()
    while True:
        answer = call()
        if answer.status_code == 200 and ok(answer):
            return time.monotonic() - back
        assert answer.status_code in (200, 503), answer.text
        assert time.monotonic() - back < RECOVERY_S * 3, answer.text
        time.sleep(0.25)


def cycle(
    name: str,
    proxy: CuttableProxy,
    load_call: Callable[[], httpx.Response],
    while_down: Callable[[], None],
    recovered: Callable[[], float],
    allowed: set[int],
) -> float:
    """Cut the backend under load, check the down behaviour, restore, time the recovery."""
    with under_load(load_call) as load:
        time.sleep(0.5)
        proxy.cut()
        time.sleep(DOWN_S / 2)
        while_down()
        time.sleep(DOWN_S / 2)
        proxy.restore()
        seconds = recovered()
        time.sleep(0.5)
    assert load.statuses() <= allowed, (load.statuses(), load.bodies[:3])
    assert load.slowest_s() < REQUEST_BOUND_S, load.slowest_s()
    assert seconds < RECOVERY_S, seconds
    # The figures the bar asks for (benchmarks/RESULTS.md quotes them from a ``-s`` run).
    print(
        f"\noutage {name}: {len(load.samples)} requests under load, statuses "
        f"{sorted(load.statuses())}, slowest {load.slowest_s():.2f} s, recovered {seconds:.2f} s"
    )
    return seconds


def ingest(client: httpx.Client, kb: str, name: str, text: str) -> dict[str, Any]:
    files = {"file": (name, text.encode(), "text/markdown")}
    upload = client.post("/ingest", data={"kb_name": kb}, files=files)
    assert upload.status_code == 202, upload.text
    return wait_for_task(client, upload.json()["job_id"])


def seeded(server: RunningServer, kb: str) -> httpx.Client:
    client = server.client()
    assert client.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
    task = ingest(client, kb, "wombat.md", "# Wombat\n\nThe wombat digs burrows in the outage.")
    assert task["status"] == "completed", task
    return client


def test_postgresql_down_is_a_503_naming_it_and_recovers(tmp_path: Path) -> None:
    with (
        postgres_database() as url,
        CuttableProxy.for_url(url) as proxy,
        running_server(tmp_path / "data", database={"url": proxy.url(url)}) as server,
    ):
        client = seeded(server, "pg-outage")
        query = {"query": "wombat", "kb_name": "pg-outage"}

        def search() -> httpx.Response:
            return client.post("/search", json=query)

        def while_down() -> None:
            assert_outage(search(), "postgresql")
            assert_outage(client.get("/knowledge_bases"), "postgresql")
            files = {"file": ("down.md", b"# Down\n\nNot stored.", "text/markdown")}
            upload = client.post("/ingest", data={"kb_name": "pg-outage"}, files=files)
            assert_outage(upload, "postgresql")
            health = client.get("/health")
            assert health.status_code == 503, health.text
            assert health.json()["checks"]["metadata_db"]["status"] == "down"

        cycle(
            "postgresql",
            proxy,
            search,
            while_down,
            lambda: recovery_s(search, lambda a: bool(a.json()["sources"]["text"])),
            {200, 503},
        )
        assert client.get("/health").json()["checks"]["metadata_db"]["status"] == "ok"
        # The ingest worker lived through it: a new document is ingested as usual.
        task = ingest(client, "pg-outage", "after.md", "# After\n\nThe echidna is back.")
        assert task["status"] == "completed", task


def _embedder(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    return json_answer(200, embeddings_body(list(body["input"]), DIM))


def test_embedder_down_degrades_hybrid_and_fails_dense_fast(tmp_path: Path) -> None:
    with serve(_embedder) as (endpoint, _), CuttableProxy.for_url(endpoint) as proxy:
        embedding = {"provider": "openai", "base_url": proxy.url(endpoint), "model": "m"}
        embedding |= {"dim": DIM, "timeout_s": 2, "max_retries": 1}
        with running_server(
            tmp_path / "data", models={"embedding": embedding}, milvus={"text_dim": DIM}
        ) as server:
            client = seeded(server, "embed-outage")
            hybrid = {"query": "wombat", "kb_name": "embed-outage", "mode": "hybrid"}
            dense = {**hybrid, "mode": "dense"}

            def search_hybrid() -> httpx.Response:
                return client.post("/search", json=hybrid)

            def while_down() -> None:
                degraded = search_hybrid()
                assert degraded.status_code == 200 and degraded.json()["sources"]["text"]
                assert any(s["status"] == "warning" for s in degraded.json()["steps"])
                assert_outage(client.post("/search", json=dense), "embedding")

            cycle(
                "embedder",
                proxy,
                search_hybrid,
                while_down,
                lambda: recovery_s(
                    lambda: client.post("/search", json=dense),
                    lambda a: bool(a.json()["sources"]["text"]),
                ),
                {200},  # hybrid always had BM25 to fall back on
            )


def _reranker(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    documents = list(body["documents"])
    results = [{"index": i, "relevance_score": 1.0 / (i + 1)} for i in range(len(documents))]
    return json_answer(200, {"results": results})


def _reranked(answer: httpx.Response) -> bool:
    steps = {s["name"]: s for s in answer.json()["steps"]}
    return steps.get("rerank", {}).get("status") == "ok"


def test_reranker_down_keeps_the_fused_order_with_a_warning_and_recovers(tmp_path: Path) -> None:
    with serve(_reranker) as (endpoint, _), CuttableProxy.for_url(endpoint) as proxy:
        rerank = {"provider": "http", "style": "cohere", "url": proxy.url(endpoint) + "/rerank"}
        rerank |= {"model": "r", "timeout_s": 2, "max_retries": 1}
        with running_server(tmp_path / "data", models={"rerank": rerank}) as server:
            client = seeded(server, "rerank-outage")
            query = {"query": "wombat", "kb_name": "rerank-outage"}

            def search() -> httpx.Response:
                return client.post("/search", json=query)

            assert _reranked(search())

            def while_down() -> None:
                degraded = search()
                assert degraded.status_code == 200 and degraded.json()["sources"]["text"]
                steps = {s["name"]: s for s in degraded.json()["steps"]}
                assert steps["rerank"]["status"] == "warning", steps
                assert "rerank" in steps["rerank"]["detail"]

            cycle(
                "reranker", proxy, search, while_down, lambda: recovery_s(search, _reranked), {200}
            )


def _chat(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    return sse("The wombat digs [1].")


def test_chat_model_down_is_a_503_naming_it_and_recovers(tmp_path: Path) -> None:
    with serve(_chat) as (endpoint, _), CuttableProxy.for_url(endpoint) as proxy:
        chat = {"provider": "openai", "base_url": proxy.url(endpoint) + "/v1", "model": "c"}
        chat |= {"timeout_s": 2, "max_retries": 1}
        with running_server(tmp_path / "data", models={"chat": chat}) as server:
            client = seeded(server, "chat-outage")
            query = {"query": "wombat", "kb_name": "chat-outage"}

            def answer() -> httpx.Response:
                return client.post("/query", json=query)

            assert "wombat" in answer().json()["answer"]

            def while_down() -> None:
                assert_outage(answer(), "chat")
                assert client.post("/search", json=query).status_code == 200  # search needs none

            cycle(
                "chat",
                proxy,
                answer,
                while_down,
                lambda: recovery_s(answer, lambda a: "wombat" in a.json().get("answer", "")),
                {200, 503},
            )


def test_milvus_down_under_load_is_a_503_naming_it_and_recovers(
    tmp_path: Path, milvus_uri: str
) -> None:
    with (
        CuttableProxy.for_url(milvus_uri) as proxy,
        running_server(
            tmp_path / "data", milvus={"uri": proxy.url(milvus_uri), "timeout_s": 3}
        ) as server,
    ):
        client = seeded(server, "milvus-outage")
        query = {"query": "wombat", "kb_name": "milvus-outage"}

        def search() -> httpx.Response:
            return client.post("/search", json=query)

        cycle(
            "milvus",
            proxy,
            search,
            lambda: assert_outage(search(), "milvus"),
            lambda: recovery_s(search, lambda a: bool(a.json()["sources"]["text"])),
            {200, 503},
        )
