"""Searches and answers when retrieval's backends are down (issue 14).

Every source of hits failing because a backend does not answer is an outage: ``/search``,
``/query`` and ``/search/stream`` say so with a 503 (an ``error`` event on the stream) naming
the backend, with Retry-After (MCP retrieve: a tool error that says so), and recover by
themselves within 10 s of the backend's return.
A partial failure (one of several sources down) stays 200 and reports the failed source in
``steps``; tests/test_outage_matrix.py covers the embedder-down half. The backends are real
servers behind a TCP proxy the test cuts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

from tests.api.server import running_server, sse_events, wait_for_task
from tests.engines.dify_fake import DATASET, KEY, dify
from tests.http_fakes import serve
from tests.outage_proxy import CuttableProxy

pytestmark = [pytest.mark.integration]

RECOVERY_S = 10.0


def _ingest(client: httpx.Client, kb: str, text: str) -> None:
    assert client.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
    upload = client.post(
        "/ingest", data={"kb_name": kb}, files={"file": ("a.md", text.encode(), "text/markdown")}
    )
    assert upload.status_code == 202, upload.text
    assert wait_for_task(client, upload.json()["job_id"])["status"] == "completed"


def _assert_outage(answer: httpx.Response, backend: str) -> None:
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["code"] == "backend_unavailable"
    assert body["details"]["backend"] == backend
    assert answer.headers["retry-after"].isdigit()


def _recovers(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    """Poll until the call answers 200; each failure on the way must be a documented 503."""
    back = time.monotonic()
    while True:
        answer = call()
        if answer.status_code == 200:
            return answer, time.monotonic() - back
        assert answer.status_code == 503, answer.text
        assert time.monotonic() - back < RECOVERY_S * 3, answer.text
        time.sleep(0.25)


def _stream_error(client: httpx.Client, query: dict[str, Any]) -> dict[str, Any]:
    with client.stream("POST", "/search/stream", json=query) as response:
        events = list(sse_events(response))
    assert events[-1][0] == "error", events
    found: dict[str, Any] = json.loads(events[-1][1])
    return found


async def _mcp_retrieve(url: str, query: str, kb: str) -> Any:
    async with Client(StreamableHttpTransport(url + "/mcp")) as client:
        return await client.call_tool("core_retrieve_text", {"query": query, "kb_names": [kb]})


def test_milvus_down_is_a_503_for_search_and_answers_and_they_recover(
    tmp_path: Path, milvus_uri: str
) -> None:
    with (
        CuttableProxy.for_url(milvus_uri) as proxy,
        running_server(
            tmp_path / "data", milvus={"uri": proxy.url(milvus_uri), "timeout_s": 3}
        ) as server,
    ):
        client = server.client()
        _ingest(client, "outage-search", "# Numbat\n\nThe numbat survives every outage.")
        query = {"query": "numbat", "kb_name": "outage-search"}
        assert client.post("/search", json=query).json()["sources"]["text"]

        proxy.cut()
        started = time.monotonic()
        _assert_outage(client.post("/search", json=query), "milvus")
        assert time.monotonic() - started < 15  # the client timeout, never a hang
        _assert_outage(client.post("/search", json={**query, "mode": "sparse"}), "milvus")
        _assert_outage(client.post("/query", json=query), "milvus")
        error = _stream_error(client, query)
        assert error["code"] == "backend_unavailable" and error["details"]["backend"] == "milvus"
        with pytest.raises(ToolError, match=r"retrieval is unavailable.*Milvus"):
            asyncio.run(_mcp_retrieve(server.url, "numbat", "outage-search"))
        setting = {"top_k": 3, "score_threshold": 0.0}
        dify = {"knowledge_id": "outage-search", "query": "numbat", "retrieval_setting": setting}
        refused = client.post("/retrieval", json=dify)  # Dify's own error shape, same 503
        assert refused.status_code == 503 and refused.json()["error_code"] == 5001
        assert refused.headers["retry-after"].isdigit()

        proxy.restore()
        answer, recovered_s = _recovers(lambda: client.post("/search", json=query))
        assert answer.json()["sources"]["text"]
        assert recovered_s < RECOVERY_S, recovered_s
        assert client.post("/query", json=query).status_code == 200


def test_a_bridged_engine_down_is_a_503_alone_and_a_warning_beside_a_live_kb(
    tmp_path: Path,
) -> None:
    """One source of several down stays 200 with the failed source in ``steps``; the same
    source down when it is the only one is the search's outage."""
    with (
        serve(dify) as (endpoint, _),
        CuttableProxy.for_url(endpoint) as proxy,
        running_server(tmp_path / "data") as server,
    ):
        client = server.client()
        _ingest(client, "local", "# Inverter\n\nThe inverter feeds the grid.")
        server.eagle.repositories.knowledge_bases.create(
            "remote",
            engine="dify",
            creation_settings={
                "base_url": proxy.url(endpoint),
                "api_key": KEY,
                "dataset_id": DATASET,
            },
        )
        both = {"query": "inverter grid", "kb_names": ["local", "remote"]}
        remote = {"query": "inverter grid", "kb_name": "remote"}
        assert client.post("/search", json=remote).json()["sources"]["text"]

        proxy.cut()
        partial = client.post("/search", json=both)
        assert partial.status_code == 200, partial.text
        assert partial.json()["sources"]["text"]  # the live KB's hits
        step = next(s for s in partial.json()["steps"] if s["name"] == "remote:dify")
        assert step["status"] == "warning" and "unreachable" in step["detail"]
        _assert_outage(client.post("/search", json=remote), "Dify")

        proxy.restore()
        answer, recovered_s = _recovers(lambda: client.post("/search", json=remote))
        assert answer.json()["sources"]["text"] and recovered_s < RECOVERY_S
