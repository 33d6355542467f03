"""Real answers of the main routes match what /openapi.json declares for them: the status, the
media type and (for JSON) the body's schema, errors included (a 422 is ``ErrorOut``, not
FastAPI's ``HTTPValidationError``; a 409, 413 and 415 are declared where they happen)."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

from tests.api.server import RunningServer, running_server


@pytest.fixture(scope="module")
def spec(server: RunningServer) -> dict[str, Any]:
    with server.client() as client:
        document: dict[str, Any] = client.get("/openapi.json").json()
    return document


def conforms(spec: dict[str, Any], answer: httpx.Response, path: str, method: str) -> None:
    """``answer`` is one of the responses the spec declares for ``method path``."""
    responses = spec["paths"][path][method]["responses"]
    status = str(answer.status_code)
    assert status in responses, f"{method.upper()} {path}: {status} undeclared ({answer.text})"
    content = responses[status].get("content", {})
    media_type = answer.headers.get("content-type", "").split(";")[0]
    declared = content.get(media_type) or content.get("*/*")
    assert declared is not None, f"{method.upper()} {path} {status}: {media_type} not in {content}"
    if media_type == "application/json":
        schema = {**declared["schema"], "components": spec["components"]}
        jsonschema.validate(answer.json(), schema)


def test_the_main_routes_answer_as_declared(server: RunningServer, spec: dict[str, Any]) -> None:
    with server.client() as client:
        conforms(spec, client.get("/health"), "/health", "get")
        created = client.post("/knowledge_bases", json={"kb_name": "contract"})
        conforms(spec, created, "/knowledge_bases", "post")
        again = client.post("/knowledge_bases", json={"kb_name": "contract"})
        assert again.status_code == 409
        conforms(spec, again, "/knowledge_bases", "post")
        invalid = client.post("/knowledge_bases", json={"kb_name": "NOT VALID"})
        assert invalid.status_code == 422
        conforms(spec, invalid, "/knowledge_bases", "post")
        conforms(spec, client.get("/knowledge_bases"), "/knowledge_bases", "get")
        upload = client.post(
            "/ingest",
            data={"kb_name": "contract"},
            files={"file": ("note.md", b"# Note\n\nSolar panels.", "text/markdown")},
        )
        assert upload.status_code == 202
        conforms(spec, upload, "/ingest", "post")
        as_json = client.post("/ingest", json={"kb_name": "contract"})
        conforms(spec, as_json, "/ingest", "post")
        document = f"/documents/{upload.json()['document_id']}/file"
        conforms(spec, client.get(document), "/documents/{document_id}/file", "get")
        conforms(spec, client.get("/metrics"), "/metrics", "get")
        conforms(spec, client.get("/tasks"), "/tasks", "get")


def test_refusals_before_the_route_are_declared(
    server: RunningServer, spec: dict[str, Any]
) -> None:
    too_large = {"query": "x" * (server.settings.server.max_body_bytes + 10), "model": "eagle:x"}
    with server.client() as client:
        for path in ("/search", "/query", "/v1/chat/completions", "/retrieval"):
            answer = client.post(path, json=too_large)
            assert answer.status_code == 413
            conforms(spec, answer, path, "post")


def test_streams_are_declared_as_server_sent_events(spec: dict[str, Any]) -> None:
    for path, method in (("/search/stream", "post"), ("/query/stream", "post")):
        assert list(spec["paths"][path][method]["responses"]["200"]["content"]) == [
            "text/event-stream"
        ]
    assert "HTTPValidationError" not in str(spec)


def test_api_keys_are_a_bearer_scheme_required_but_on_health(
    tmp_path_factory: pytest.TempPathFactory, spec: dict[str, Any]
) -> None:
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "security" not in spec  # an open API asks for no key
    keys = [{"name": "admin", "key": "contract-key"}]
    with running_server(tmp_path_factory.mktemp("keyed"), server={"api_keys": keys}) as running:
        keyed = running.client().get("/openapi.json").json()
        refused = running.client().get("/engines")
    assert keyed["security"] == [{"bearerAuth": []}]
    assert keyed["paths"]["/health"]["get"]["security"] == []
    assert refused.status_code == 401
    conforms(keyed, refused, "/engines", "get")
