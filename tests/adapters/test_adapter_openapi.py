"""The OpenAI facade's and Dify's bodies are in the OpenAPI document as typed schemas, and what
a real server sends matches them (the routes parse their own bodies, so FastAPI would not have
listed them by itself)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest
from pydantic import BaseModel

from eagle_rag.api.documented import inlined, json_body
from tests.adapters.conftest import KEY
from tests.api.server import RunningServer

HEADERS = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def document(server: RunningServer) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(server.url + "/openapi.json", timeout=30).json()
    return found


def check(document: dict[str, Any], schema: dict[str, Any], value: Any) -> None:
    """Validate ``value`` against ``schema`` (references into the document's components), and
    require every key of each object it has properties for to be documented."""
    rooted = {**schema, "components": document["components"]}
    jsonschema.Draft202012Validator(rooted).validate(value)
    resolved = _deref(document, schema)
    if isinstance(value, dict) and "properties" in resolved:
        assert set(value) <= set(resolved["properties"]), set(value) - set(resolved["properties"])


def _deref(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    reference = schema.get("$ref", "")
    if reference.startswith("#/components/schemas/"):
        found: dict[str, Any] = document["components"]["schemas"][reference.rsplit("/", 1)[1]]
        return found
    return schema


def operation(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    found: dict[str, Any] = document["paths"][path][method]
    return found


def response_schema(op: dict[str, Any], status: str, media: str = "application/json") -> Any:
    return op["responses"][status]["content"][media]["schema"]


def ref(op: dict[str, Any], status: str) -> str:
    found: str = response_schema(op, status)["$ref"]
    return found


def test_request_bodies_are_typed_schemas(document: dict[str, Any]) -> None:
    dify = operation(document, "/retrieval", "post")
    body = dify["requestBody"]["content"]["application/json"]["schema"]
    assert dify["requestBody"]["required"] is True
    assert {"knowledge_id", "query", "retrieval_setting"} <= set(body["required"])
    assert body["properties"]["retrieval_setting"]["properties"]["top_k"]["maximum"] == 100
    chat = operation(document, "/v1/chat/completions", "post")
    body = chat["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["required"]) == {"model", "messages"}
    roles = body["properties"]["messages"]["items"]["properties"]["role"]["enum"]
    assert {"user", "assistant", "system"} <= set(roles)
    assert "session_id" in body["properties"]["eagle"]["properties"]
    assert "$defs" not in json.dumps(document)  # every reference resolves in the document


def test_responses_name_their_models(document: dict[str, Any]) -> None:
    dify = operation(document, "/retrieval", "post")
    assert ref(dify, "200") == "#/components/schemas/DifyRecords"
    for status in ("400", "403", "404", "429", "503"):
        assert ref(dify, status) == "#/components/schemas/DifyError"
    chat = operation(document, "/v1/chat/completions", "post")
    assert ref(chat, "200") == "#/components/schemas/ChatCompletion"
    assert ref(chat, "404") == "#/components/schemas/OpenAIError"
    chunk = response_schema(chat, "200", "text/event-stream")
    assert chunk["properties"]["object"]["const"] == "chat.completion.chunk"
    models = operation(document, "/v1/models", "get")
    assert ref(models, "200") == "#/components/schemas/ModelList"


def test_what_the_server_sends_matches_the_document(
    server: RunningServer, corpus: dict[str, str], document: dict[str, Any]
) -> None:
    dify = operation(document, "/retrieval", "post")
    request = {
        "knowledge_id": "energy",
        "query": "How is the inverter connected?",
        "retrieval_setting": {"top_k": 2, "score_threshold": 0.0},
    }
    found = httpx.post(server.url + "/retrieval", json=request, headers=HEADERS, timeout=60)
    assert found.status_code == 200 and found.json()["records"]
    check(document, response_schema(dify, "200"), found.json())
    missing = httpx.post(
        server.url + "/retrieval", json={**request, "knowledge_id": "nope"}, headers=HEADERS
    )
    assert missing.status_code == 404
    check(document, response_schema(dify, "404"), missing.json())

    chat = operation(document, "/v1/chat/completions", "post")
    ask = {"model": "eagle:energy", "messages": [{"role": "user", "content": "Inverter?"}]}
    url = server.url + "/v1/chat/completions"
    answer = httpx.post(url, json=ask, headers=HEADERS, timeout=120)
    assert answer.status_code == 200, answer.text
    check(document, response_schema(chat, "200"), answer.json())
    unknown = httpx.post(url, json={**ask, "model": "gpt-4"}, headers=HEADERS, timeout=30)
    assert unknown.status_code == 404
    check(document, response_schema(chat, "404"), unknown.json())
    chunk_schema = response_schema(chat, "200", "text/event-stream")
    with httpx.stream(
        "POST", url, json={**ask, "stream": True}, headers=HEADERS, timeout=120
    ) as stream:
        events = [line[6:] for line in stream.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]" and len(events) > 2
    for event in events[:-1]:
        check(document, chunk_schema, json.loads(event))
    models = operation(document, "/v1/models", "get")
    listed = httpx.get(server.url + "/v1/models", headers=HEADERS, timeout=30).json()
    check(document, response_schema(models, "200"), listed)


def test_bodies_that_are_not_the_model_are_refused_in_each_clients_shape(
    server: RunningServer,
) -> None:
    dify = httpx.post(server.url + "/retrieval", content=b"[1, 2]", headers=HEADERS)
    assert dify.status_code == 400 and dify.json()["error_code"] == 3001
    assert dify.json()["error_msg"].startswith("body:")
    broken = httpx.post(server.url + "/retrieval", content=b"{not json", headers=HEADERS)
    assert broken.status_code == 400 and broken.json()["error_code"] == 3001
    chat = httpx.post(
        server.url + "/v1/chat/completions",
        json={"model": "eagle:energy", "messages": [{"role": "robot", "content": "x"}]},
        headers=HEADERS,
    )
    error = chat.json()["error"]
    assert chat.status_code == 400 and error["type"] == "invalid_request_error"
    assert error["param"] == "messages.0.role" and error["message"].startswith("messages.0.role")


class _Leaf(BaseModel):
    name: str


class _Tree(BaseModel):
    leaf: _Leaf
    children: list[_Tree] = []


def test_inlined_schemas_resolve_nested_and_recursive_models() -> None:
    schema = inlined(_Tree)
    assert schema["properties"]["leaf"]["properties"]["name"]["type"] == "string"
    assert schema["properties"]["leaf"]["required"] == ["name"]
    # A tree inside the tree: the recursion stops at the second visit.
    assert schema["properties"]["children"]["items"] == {"type": "object"}
    assert "$defs" not in json.dumps(schema)
    body = json_body(_Leaf, description="a leaf")["requestBody"]
    assert body["required"] is True and body["description"] == "a leaf"
