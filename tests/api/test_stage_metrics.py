"""Ingest phase durations and model-call latency/errors, driven by real requests and scraped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.api.test_operations_metrics import scrape
from tests.http_fakes import json_answer, serve

DOC = b"# Boiler\n\nBleed the radiator in autumn.\n\n## Pressure\n\nKeep it near 1.5 bar.\n"


def rerank_endpoint(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    """A Cohere-style reranker that fails for queries naming 'outage'."""
    if "outage" in body["query"]:
        return json_answer(500, {"error": "reranker down"})
    results = [{"index": i, "relevance_score": 1 / (i + 1)} for i in range(len(body["documents"]))]
    return json_answer(200, {"results": results})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve(rerank_endpoint) as (url, _):
        rerank = {"provider": "http", "style": "cohere", "url": url, "model": "r", "max_retries": 0}
        with running_server(
            tmp_path_factory.mktemp("stages"), models={"rerank": rerank}
        ) as running:
            yield running


def test_each_ingest_phase_and_the_whole_ingest_are_timed(server: RunningServer) -> None:
    with server.client() as client:
        before = scrape(client)
        client.post("/knowledge_bases", json={"kb_name": "boiler"})
        job = client.post(
            "/ingest", data={"kb_name": "boiler"}, files={"file": ("b.md", DOC, "text/markdown")}
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "completed"
        after = scrape(client)
    for phase in ("ingest", "route", "parse", "chunk", "classify", "embed", "upsert"):
        key = f'eagle_ingest_phase_seconds_count{{outcome="ok",phase="{phase}"}}'
        assert after[key] > before.get(key, 0), phase
        total = f'eagle_ingest_phase_seconds_sum{{outcome="ok",phase="{phase}"}}'
        assert after[total] > before.get(total, 0), phase
    parsed = 'eagle_hook_calls_total{hook="PARSE_DOCUMENT",outcome="ok",plugin="core"}'
    assert after[parsed] == before.get(parsed, 0) + 1


def test_model_calls_are_timed_and_their_errors_counted(server: RunningServer) -> None:
    with server.client() as client:  # on its own too: the KB the test above fills
        if client.get("/knowledge_bases/boiler").status_code == 404:
            client.post("/knowledge_bases", json={"kb_name": "boiler"})
            files = {"file": ("b.md", DOC, "text/markdown")}
            job = client.post("/ingest", data={"kb_name": "boiler"}, files=files).json()
            assert wait_for_task(client, job["job_id"])["status"] == "completed"
    embedder = 'eagle_model_call_seconds_count{model="embedder",outcome="ok"}'
    reranker_ok = 'eagle_model_call_seconds_count{model="reranker",outcome="ok"}'
    reranker_failed = 'eagle_model_call_seconds_count{model="reranker",outcome="error"}'
    errors = 'eagle_model_call_errors_total{model="reranker"}'
    chat = 'eagle_model_call_seconds_count{model="chat",outcome="ok"}'
    with server.client() as client:
        before = scrape(client)
        assert client.post("/search", json={"query": "radiator", "kb_name": "boiler"}).is_success
        # The reranker fails: the search still answers (fused order) and the error is counted.
        failed = client.post("/search", json={"query": "outage radiator", "kb_name": "boiler"})
        assert failed.is_success
        assert client.post("/query", json={"query": "radiator?", "kb_name": "boiler"}).is_success
        after = scrape(client)
    assert after[embedder] >= before.get(embedder, 0) + 3  # one query embedding per search
    assert after[reranker_ok] == before.get(reranker_ok, 0) + 2
    assert after[reranker_failed] == before.get(reranker_failed, 0) + 1
    assert after[errors] == before.get(errors, 0) + 1
    assert after[chat] == before.get(chat, 0) + 1
