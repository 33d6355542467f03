"""The refusals sent before any route runs (body too large, another site's page, a host name the
open API does not serve) come in the error shape of the protocol the path speaks: OpenAI's on
``/v1``, Dify's on ``/retrieval``, Eagle-RAG's own elsewhere."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.api.server import RunningServer

EVIL = {"Origin": "https://evil.example"}


def oversized(server: RunningServer) -> bytes:
    limit = server.settings.server.max_body_bytes
    return json.dumps({"query": "x" * (limit + 10), "model": "eagle:docs"}).encode()


def test_a_body_over_the_cap_is_refused_in_each_protocols_shape(server: RunningServer) -> None:
    body = oversized(server)
    headers = {"content-type": "application/json"}
    with server.client() as client:
        chat = client.post("/v1/chat/completions", content=body, headers=headers)
        assert chat.status_code == 413
        error = chat.json()["error"]
        assert error["code"] == "payload_too_large" and error["type"] == "invalid_request_error"
        assert error["message"].endswith("(server.max_body_bytes)")
        # counted as it arrives (no Content-Length): the same shape
        chunks = iter([body[i : i + 65536] for i in range(0, len(body), 65536)])
        counted = client.post("/v1/chat/completions", content=chunks, headers=headers)
        assert counted.status_code == 413 and counted.json()["error"]["code"] == "payload_too_large"
        dify = client.post("/retrieval", content=body, headers=headers)
        assert dify.status_code == 413 and set(dify.json()) == {"error_code", "error_msg"}
        assert dify.json()["error_code"] == 3001 and "max_body_bytes" in dify.json()["error_msg"]
        native = client.post("/search", content=body, headers=headers)
        assert native.status_code == 413 and native.json()["code"] == "payload_too_large"
    sdk = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.chat.completions.create(
            model="eagle:docs", messages=[{"role": "user", "content": "x " * 700_000}]
        )
    assert refused.value.status_code == 413 and refused.value.code == "payload_too_large"
    assert refused.value.type == "invalid_request_error"


def test_another_sites_page_is_refused_in_each_protocols_shape(server: RunningServer) -> None:
    with server.client(**EVIL) as client:
        chat = client.post("/v1/chat/completions", json={"model": "eagle:docs", "messages": []})
        assert chat.status_code == 403
        error = chat.json()["error"]
        assert error["type"] == "permission_error" and error["code"] == "forbidden"
        assert "cross-site" in error["message"]
        dify = client.post("/retrieval", json={"knowledge_id": "docs", "query": "x"})
        assert dify.status_code == 403 and dify.json()["error_code"] == 1002
        assert "cross-site" in dify.json()["error_msg"]
        native = client.post("/search", json={"query": "x"})
        assert native.status_code == 403 and native.json()["code"] == "forbidden"
        assert native.json()["details"] == {"origin": "https://evil.example"}


def test_an_unserved_host_name_is_refused_in_each_protocols_shape(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url, headers={"Host": "evil.example"}) as client:
        models = client.get("/v1/models")
        assert models.status_code == 403
        assert "not reached as 'evil.example'" in models.json()["error"]["message"]
        assert client.get("/knowledge_bases").json()["details"] == {"host": "evil.example"}


def test_an_unknown_path_is_a_json_404_in_each_protocols_shape(server: RunningServer) -> None:
    with server.client() as client:
        native = client.get("/no_such_route")
        assert native.status_code == 404
        assert native.json() == {"code": "not_found", "message": "Not Found"}
        openai_style = client.post("/v1/embeddings", json={"model": "eagle:x", "input": "x"})
        assert openai_style.status_code == 404
        error = openai_style.json()["error"]
        assert error["code"] == "not_found" and error["type"] == "not_found_error"


def test_a_method_the_route_does_not_take_is_a_405_naming_the_allowed_ones(
    server: RunningServer,
) -> None:
    with server.client() as client:
        put = client.put("/knowledge_bases", json={})
        assert put.status_code == 405 and put.json()["code"] == "method_not_allowed"
        assert set(put.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
        delete = client.delete("/tasks")
        assert delete.status_code == 405 and delete.headers["allow"] == "GET, HEAD"
        dify = client.get("/retrieval")
        assert dify.status_code == 405 and set(dify.json()) == {"error_code", "error_msg"}
        models = client.delete("/v1/models")
        assert models.status_code == 405 and models.json()["error"]["code"] == "method_not_allowed"
        static = client.post("/ui/static/app.css")  # a mount's own 405 kept its Allow empty
        assert static.status_code == 405 and static.headers["allow"] == "GET, HEAD"


def test_head_answers_wherever_get_does_without_a_body(server: RunningServer) -> None:
    with server.client() as client:
        for path in ("/health", "/knowledge_bases", "/tasks", "/v1/models"):
            got, head = client.get(path), client.head(path)
            assert head.status_code == got.status_code == 200, path
            assert head.content == b""
            assert head.headers["content-type"] == got.headers["content-type"]
        assert client.head("/no_such_route").status_code == 404
        assert client.head("/search").status_code == 405  # POST only


def test_mcp_is_still_served_at_its_path_alone(server: RunningServer) -> None:
    with server.client() as client:
        assert client.get("/mcp/", follow_redirects=False).status_code == 307
        assert client.get("/mcpx").status_code == 404
