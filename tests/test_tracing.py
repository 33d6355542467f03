"""OpenTelemetry spans of one ingest and one query, the OTLP export, and tracing off by default."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

from eagle_rag.bootstrap import build_app
from eagle_rag.errors import SettingsError
from eagle_rag.plugins.hooks import CATALOG
from eagle_rag.settings import load_settings
from eagle_rag.tracing import HOOK_STAGES
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.http_fakes import serve

MEMORY = {"tracing": {"enabled": True, "exporter": "memory"}}
DOC = b"# Pumps\n\nThe pump is primed before start.\n\n## Valves\n\nClose the valve after use.\n"


@pytest.fixture(scope="module")
def traced_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("traced"), telemetry=MEMORY) as running:
        yield running


def spans_of(server: RunningServer) -> list[ReadableSpan]:
    return list(server.eagle.bus.tracing.memory.get_finished_spans())


def subtree(spans: list[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    """Every span below ``root`` (any depth), by parent links."""
    ids, found = {root.context.span_id}, []
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        if span.parent is not None and span.parent.span_id in ids:
            ids.add(span.context.span_id)
            found.append(span)
    return found


def ingest(client: httpx.Client, kb: str) -> str:
    client.post("/knowledge_bases", json={"kb_name": kb})
    job = client.post(
        "/ingest", data={"kb_name": kb}, files={"file": ("pumps.md", DOC, "text/markdown")}
    ).json()
    task = wait_for_task(client, job["job_id"])
    assert task["status"] == "completed", task
    return str(task["document_id"])


def test_one_ingest_is_one_span_tree_with_every_stage(traced_server: RunningServer) -> None:
    with traced_server.client() as client:
        document_id = ingest(client, "traced")
    spans = spans_of(traced_server)
    [root] = [s for s in spans if s.name == "ingest" and _attr(s, "document") == document_id]
    below = subtree(spans, root)
    stages = {s.name for s in below}
    assert {"route", "parse", "chunk", "classify", "embed", "upsert"} <= stages
    parse = next(s for s in below if s.name == "parse")
    assert _attr(parse, "kb") == "traced"
    assert _attr(parse, "document") == document_id
    assert _attr(parse, "plugin") == "core"
    assert _attr(parse, "hook") == "PARSE_DOCUMENT"
    assert all(s.context.trace_id == root.context.trace_id for s in below)
    assert all(s.end_time and root.end_time and s.end_time <= root.end_time for s in below)


def test_one_query_is_one_span_tree_from_the_request(traced_server: RunningServer) -> None:
    with traced_server.client() as client:
        ingest(client, "queried")
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        response = client.post(
            "/query",
            json={"query": "When is the pump primed?", "kb_name": "queried"},
            headers={"traceparent": parent},
        )
        assert response.is_success
    spans = spans_of(traced_server)
    [request] = [s for s in spans if s.name == "POST /query"]
    assert format(request.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert request.attributes is not None and request.attributes["http.route"] == "/query"
    assert request.attributes["http.response.status_code"] == 200
    below = subtree(spans, request)
    names = [s.name for s in below]
    assert {"search", "route", "recall", "embed", "fusion", "expansion", "generate"} <= set(names)
    [search] = [s for s in below if s.name == "search"]
    recalls = [s for s in below if s.name == "recall"]
    assert recalls and all(s.parent and s.parent.span_id == search.context.span_id for s in recalls)
    assert {_attr(s, "collection") for s in recalls} >= {"eagle_text"}
    embed = next(s for s in below if s.name == "embed")
    assert embed.parent is not None and embed.parent.span_id in {s.context.span_id for s in recalls}
    assert _attr(embed, "kb") == "queried"


def test_a_failing_stage_marks_its_span_as_an_error(traced_server: RunningServer) -> None:
    tracing = traced_server.eagle.bus.tracing
    with pytest.raises(RuntimeError), tracing.span("parse", document="d1"):
        raise RuntimeError("corrupt file")
    span = tracing.memory.get_finished_spans()[-1]
    assert span.name == "parse" and not span.status.is_ok
    assert [e.name for e in span.events] == ["exception"]


def test_an_ingest_that_fails_without_raising_is_an_error_span(
    traced_server: RunningServer,
) -> None:
    with traced_server.client() as client:
        client.post("/knowledge_bases", json={"kb_name": "empty"})
        files = {"file": ("empty.json", b"{}", "application/json")}
        job = client.post("/ingest", data={"kb_name": "empty"}, files=files).json()
        task = wait_for_task(client, job["job_id"])
    assert task["status"] == "failed", task  # nothing to index: returned, not raised
    spans = spans_of(traced_server)
    [root] = [s for s in spans if s.name == "ingest" and _attr(s, "task") == job["job_id"]]
    assert not root.status.is_ok and _attr(root, "outcome") == "error"


def test_spans_are_exported_over_otlp_http_to_a_receiver(tmp_path: Path) -> None:
    def receiver(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        return 200, {"content-type": "application/x-protobuf"}, b""

    with serve(receiver) as (url, recorded):
        otlp = {"tracing": {"enabled": True, "endpoint": f"{url}/v1/traces"}}
        with running_server(tmp_path, telemetry=otlp) as running, running.client() as client:
            assert client.post("/search", json={"query": "pump"}).is_success
        deadline = time.monotonic() + 10  # stop() flushed the batch; the receiver may lag
        while not recorded.requests and time.monotonic() < deadline:
            time.sleep(0.05)
    names = set()
    for path, body, headers in recorded.requests:
        assert path == "/v1/traces" and headers["content-type"] == "application/x-protobuf"
        export = ExportTraceServiceRequest.FromString(body["_raw"])
        for resource in export.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "eagle-rag"
            names |= {s.name for scope in resource.scope_spans for s in scope.spans}
    assert {"POST /search", "search"} <= names  # an empty instance: no plan to recall


def test_tracing_is_off_by_default_and_records_nothing(tmp_path: Path) -> None:
    app = build_app(load_settings({"EAGLE_DATA_DIR": str(tmp_path)}))
    tracing = app.bus.tracing
    assert not tracing.enabled and tracing.memory is None
    with tracing.span("parse", document="d1") as span:
        assert not span.is_recording()


def test_a_bad_otlp_endpoint_is_refused_at_load(tmp_path: Path) -> None:
    for endpoint in ("127.0.0.1:4318", "ftp://collector/v1/traces", ""):
        with pytest.raises(SettingsError, match=r"telemetry\.tracing\.endpoint"):
            load_settings(
                {"EAGLE_DATA_DIR": str(tmp_path)},
                overrides={"telemetry": {"tracing": {"enabled": True, "endpoint": endpoint}}},
            )


def test_every_declared_hook_has_a_stage_decision() -> None:
    # A new hook must say which stage its calls are timed as (or None for per-chunk hooks).
    assert set(HOOK_STAGES) == {spec.name for spec in CATALOG}


def _attr(span: ReadableSpan, key: str) -> Any:
    return (span.attributes or {}).get(f"eagle.{key}")
