"""Search, answers, their SSE streams, sessions and the system routes, on a real server."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from tests.api.server import RunningServer, sse_events, wait_for_task
from tests.retrieval.conftest import CHINESE, SOLAR


@pytest.fixture(scope="module")
def client(server: RunningServer) -> httpx.Client:
    client = server.client()
    client.post("/knowledge_bases", json={"kb_name": "docs"})
    for name, text in (("solar.md", SOLAR), ("zh.md", CHINESE)):
        job = client.post(
            "/ingest",
            data={"kb_name": "docs"},
            files={"file": (name, text.encode(), "text/markdown")},
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "completed"
    return client


def test_search_returns_the_wire_shape(client: httpx.Client) -> None:
    body = client.post(
        "/search", json={"query": "connect the inverter", "kb_name": "docs", "top_k": 3}
    ).json()
    first = body["sources"]["text"][0]
    assert set(first) >= {
        "index",
        "document_id",
        "kb_name",
        "path",
        "level",
        "type",
        "page_nums",
        "content",
        "score",
        "scores",
    }
    assert first["index"] == 1 and first["path"] == "Solar Guide/Installation/Wiring"
    assert first["level"] == 3 and {"dense", "sparse", "rrf"} <= set(first["scores"])
    assert body["sources"]["image"] == []
    assert body["route"]["plans"][0]["collection"] == "eagle_text"
    assert [s["name"] for s in body["steps"]][:2] == ["scope", "classify_query"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"query": "x", "kb_name": "nope"}, 404, "not_found"),
        ({"query": "x", "filters": {"colour": "red"}}, 400, "invalid_input"),
        ({"query": "x", "filters": {"metadata": {"team": '" or 1==1 or "'}}}, 200, None),
        ({"query": ""}, 422, "invalid_request"),
        ({"query": "x", "top_k": 0}, 422, "invalid_request"),
        ({"query": "x", "mode": "fuzzy"}, 422, "invalid_request"),
        ({"query": "x", "kb_name": "../etc"}, 422, "invalid_request"),
        ({"query": "x", "document_ids": ["not-a-document"]}, 404, "not_found"),
    ],
)
def test_search_errors(
    client: httpx.Client, body: dict[str, Any], status: int, code: str | None
) -> None:
    answer = client.post("/search", json=body)
    assert answer.status_code == status, answer.text
    if code:
        assert answer.json()["code"] == code
    else:
        assert answer.json()["sources"]["text"] == []


def test_oversized_json_body_is_413(client: httpx.Client, server: RunningServer) -> None:
    limit = server.settings.server.max_body_bytes
    answer = client.post(
        "/search",
        content=json.dumps({"query": "x" * (limit + 10)}),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 413 and answer.json()["code"] == "payload_too_large"
    assert answer.json()["message"].endswith(f"larger than {limit} bytes (server.max_body_bytes)")


def test_oversized_chunked_json_body_is_413_too(
    client: httpx.Client, server: RunningServer
) -> None:
    """Without a Content-Length the body is counted as it arrives; the framework's own answer
    to the cut-off read (400) must not replace the 413."""
    limit = server.settings.server.max_body_bytes
    body = json.dumps({"query": "x" * (limit + 10)}).encode()
    chunks = iter([body[i : i + 65536] for i in range(0, len(body), 65536)])
    answer = client.post("/search", content=chunks, headers={"content-type": "application/json"})
    assert answer.status_code == 413 and answer.json()["code"] == "payload_too_large"


def test_search_stream_sends_steps_sources_done(client: httpx.Client) -> None:
    with client.stream(
        "POST", "/search/stream", json={"query": "inverter", "kb_name": "docs"}
    ) as r:
        events = list(sse_events(r))
    names = [n for n, _ in events]
    assert names[-2:] == ["sources", "done"] and set(names[:-2]) == {"step"}
    assert json.loads(events[-1][1])["sources"]["text"]


def test_search_stream_ends_with_an_error_event_on_an_unexpected_failure(
    server: RunningServer, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def crash(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError("'str' object has no attribute 'scores'")

    monkeypatch.setattr(server.eagle.retrieval, "search", crash)
    with client.stream(
        "POST", "/search/stream", json={"query": "inverter", "kb_name": "docs"}
    ) as r:
        events = list(sse_events(r))
    assert [n for n, _ in events] == ["error"]
    assert json.loads(events[0][1]) == {
        "code": "internal_error",
        "message": "internal error (AttributeError)",  # its text stays in the log
    }


SCOPE_MISTAKES = [
    ({"kb_name": "nope"}, 404, "not_found"),
    ({"kb_name": "docs", "document_ids": ["not-a-document"]}, 404, "not_found"),
    ({"kb_name": "docs", "filters": {"year": {"from": 2020}}}, 400, "invalid_input"),
    ({"kb_name": "docs", "retrieval_settings": {"other": {}}}, 400, "invalid_input"),
]


@pytest.mark.parametrize(("scope", "status", "code"), SCOPE_MISTAKES)
@pytest.mark.parametrize("route", ["/search/stream", "/query", "/query/stream"])
def test_scope_mistakes_are_refused_before_a_stream_or_a_session(
    client: httpx.Client, route: str, scope: dict[str, Any], status: int, code: str
) -> None:
    """A caller's mistake in the scope is its status code on every route, as on /search: not a
    200 whose stream or body carries the error, and no empty session left behind."""
    sessions = len(client.get("/sessions").json())
    answer = client.post(route, json={"query": "inverter", **scope})
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    assert len(client.get("/sessions").json()) == sessions


def test_query_answers_with_citations(client: httpx.Client) -> None:
    body = client.post(
        "/query", json={"query": "how do I connect the inverter", "kb_name": "docs"}
    ).json()
    assert "copper cables" in body["answer"] and "[1]" in body["answer"]
    assert body["sources"]["text"][0]["index"] == 1
    assert body["warnings"] == [] and body["session_id"]
    assert [s["name"] for s in body["steps"]] == ["route", "recall", "rerank", "generate"]


def test_query_stream_follows_the_event_grammar(client: httpx.Client) -> None:
    with client.stream(
        "POST", "/query/stream", json={"query": "逆变器怎么连接", "kb_name": "docs"}
    ) as response:
        events = list(sse_events(response))
    names = [n for n, _ in events]
    done = json.loads(events[-1][1])
    tokens = names.count("token")
    assert tokens > 1
    assert names == ["session", "step", "step", "step", "sources", *["token"] * tokens, "done"]
    assert done["answer"].startswith("逆变器需要用铜线连接")


def test_attachments_are_parsed_and_reach_the_answer(client: httpx.Client) -> None:
    import base64

    from tests.ingest.documents import docx_bytes

    body = client.post(
        "/query",
        json={
            "query": "what does the attachment cover",
            "kb_name": "docs",
            "attachments": [
                {"name": "note.txt", "text": "The attachment covers roof safety."},
                {"name": "policy.docx", "content_base64": base64.b64encode(docx_bytes()).decode()},
            ],
        },
    ).json()
    assert "attach_parse" in [s["name"] for s in body["steps"]]
    bad = client.post(
        "/query",
        json={"query": "x", "attachments": [{"name": "a.pdf", "content_base64": "%%%"}]},
    )
    assert bad.status_code == 400 and "base64" in bad.json()["message"]


def test_sessions_keep_the_conversation(client: httpx.Client) -> None:
    first = client.post("/query", json={"query": "inverter cables", "kb_name": "docs"}).json()
    client.post(
        "/query",
        json={"query": "and cleaning?", "kb_name": "docs", "session_id": first["session_id"]},
    )
    messages = client.get(f"/sessions/{first['session_id']}/messages").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[1]["sources"]["text"] and messages[1]["steps"][-1]["name"] == "generate"
    assert first["session_id"] in [s["session_id"] for s in client.get("/sessions").json()]
    unknown = client.post("/query", json={"query": "x", "session_id": "nope"})
    assert unknown.status_code == 404
    assert client.delete(f"/sessions/{first['session_id']}").json()["deleted"]
    assert client.get(f"/sessions/{first['session_id']}/messages").status_code == 404


def test_health_plugins_metrics_parsers_openapi(client: httpx.Client) -> None:
    health = client.get("/health").json()
    assert health["status"] == "ok"
    assert {"metadata_db", "milvus", "object_store", "data_dir"} <= set(health["checks"])
    plugins = client.get("/health/plugins").json()
    assert "eagle_text" in plugins["collections"]
    client.post("/search", json={"query": "inverter", "kb_name": "docs"})
    metrics = client.get("/metrics")
    assert 'eagle_http_request_seconds_count{method="POST",route="/search"' in metrics.text
    assert "eagle_ingest_tasks" in metrics.text
    parsers = client.get("/parsers").json()
    assert any("application/pdf" in p["supported_mime_types"] for p in parsers)
    spec = client.get("/openapi.json").json()
    assert {"/search", "/query", "/ingest", "/tasks/{job_id}/stream"} <= set(spec["paths"])


def test_another_namespace_is_forbidden(client: httpx.Client) -> None:
    answer = client.post(
        "/search", json={"query": "x"}, headers={"X-Eagle-Namespace": "lakehouse-bi"}
    )
    assert answer.status_code == 403 and answer.json()["code"] == "namespace_forbidden"
    same = client.post("/search", json={"query": "x"}, headers={"X-Eagle-Namespace": "core"})
    assert same.status_code == 200


@pytest.mark.parametrize("path", ["/search", "/search/stream", "/query", "/query/stream"])
def test_the_seeds_plugin_namespace_field_is_accepted_and_checked(
    client: httpx.Client, path: str
) -> None:
    body = {"query": "inverter", "kb_name": "docs", "plugin_namespace": "core"}
    assert client.post(path, json=body).status_code == 200
    refused = client.post(path, json={**body, "plugin_namespace": "biomed"})
    assert refused.status_code == 403 and refused.json()["code"] == "namespace_forbidden"
    in_query = client.post(path, params={"plugin_namespace": "biomed"}, json={"query": "x"})
    assert in_query.status_code == 403


def test_plugin_namespace_in_query_strings_and_other_bodies(client: httpx.Client) -> None:
    assert client.get("/knowledge_bases", params={"plugin_namespace": "core"}).status_code == 200
    refused = client.get("/knowledge_bases", params={"plugin_namespace": "biomed"})
    assert refused.status_code == 403 and refused.json()["details"]["namespace"] == "biomed"
    created = client.post("/knowledge_bases", json={"kb_name": "ns-ok", "plugin_namespace": "core"})
    assert created.status_code in (200, 201)
    foreign = client.post("/knowledge_bases", json={"kb_name": "ns-no", "plugin_namespace": "x-y"})
    assert foreign.status_code == 403
    assert client.get("/knowledge_bases/ns-no").status_code == 404  # nothing was created


def test_plugin_namespace_in_an_upload_form_is_checked(client: httpx.Client) -> None:
    """The multipart form's field was ignored: an upload naming another namespace was taken."""
    upload = {"file": ("ns.md", b"# Namespaces\nA page about namespaces.\n", "text/markdown")}
    refused = client.post(
        "/ingest", data={"kb_name": "docs", "plugin_namespace": "biomed"}, files=upload
    )
    assert refused.status_code == 403 and refused.json()["code"] == "namespace_forbidden"
    titles = [d["filename"] for d in client.get("/documents", params={"kb_name": "docs"}).json()]
    assert "ns.md" not in titles  # nothing was stored
    own = client.post("/ingest", data={"kb_name": "docs", "plugin_namespace": "core"}, files=upload)
    assert own.status_code in (200, 202)


def test_tokens_reach_the_client_while_the_model_is_still_writing(
    server: RunningServer, client: httpx.Client
) -> None:
    """A slow model streaming over a real socket: the client sees each token when it is sent."""
    from eagle_rag.models.chat import OpenAICompatibleChat
    from tests.http_fakes import serve

    def slow_model(*_: Any) -> Any:
        pieces = [
            ("data: " + json.dumps({"choices": [{"delta": {"content": word}}]}) + "\n\n", 0.3)
            for word in ("Copper ", "cables ", "[1].")
        ]
        pieces.append(("data: [DONE]\n\n", 0.0))
        return 200, {"content-type": "text/event-stream"}, [(p.encode(), d) for p, d in pieces]

    engine = server.eagle.answers
    previous = engine.model
    with serve(slow_model) as (url, _):
        engine.model = OpenAICompatibleChat(base_url=url + "/v1", model="slow", max_retries=0)
        try:
            arrivals: dict[str, list[float]] = {}
            with client.stream(
                "POST", "/query/stream", json={"query": "inverter", "kb_name": "docs"}
            ) as response:
                for name, _data in sse_events(response):
                    arrivals.setdefault(name, []).append(time.monotonic())
        finally:
            engine.model = previous
    tokens = arrivals["token"]
    assert len(tokens) == 3
    # Each token arrived about when the model wrote it (0.3 s apart), not all at the end.
    assert tokens[-1] - tokens[0] >= 0.45
    assert arrivals["sources"][0] < tokens[0] <= arrivals["done"][0]


def test_health_is_degraded_or_down_when_backends_fail(
    server: RunningServer, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> str:
        raise ConnectionError("refused")

    monkeypatch.setattr(server.eagle.objects, "health", broken)
    degraded = client.get("/health")
    assert degraded.status_code == 200 and degraded.json()["status"] == "degraded"
    assert degraded.json()["checks"]["object_store"]["status"] == "down"
    monkeypatch.setattr(server.eagle.vectors, "health", broken)
    down = client.get("/health")
    assert down.status_code == 503 and down.json()["status"] == "down"
    assert "ConnectionError: refused" in down.json()["checks"]["milvus"]["detail"]


def test_query_honours_the_retrieval_fields_it_accepts(client: httpx.Client) -> None:
    def recall_trace(**options: Any) -> list[str]:
        body = client.post(
            "/query", json={"query": "Installation", "kb_name": "docs", "mode": "sparse", **options}
        ).json()
        recall = next(s for s in body["steps"] if s["name"] == "recall")
        return list(recall["trace"])

    assert "expand_parents" in recall_trace()
    assert "expand_parents" not in recall_trace(expand_parents=False)
    assert "rerank" not in recall_trace(rerank=False)
    assert "token_budget" in recall_trace(token_budget=5)
