"""The OpenAPI document's links (create → get/delete) name real operations and parameters, so
clients and Schemathesis's stateful phase can chain calls with real ids."""

from __future__ import annotations

from typing import Any

import pytest

from eagle_rag.api.app import create_app
from eagle_rag.api.links import LINKS, add_links
from tests.api.server import server_settings


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    api = create_app(server_settings(tmp_path_factory.mktemp("links") / "data", 1))
    found: dict[str, Any] = api.openapi()
    return found


def _operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        op["operationId"]: op
        for methods in schema["paths"].values()
        for op in methods.values()
        if isinstance(op, dict) and "operationId" in op
    }


def test_every_source_response_links_to_real_operations(schema: dict[str, Any]) -> None:
    operations = _operations(schema)
    for (path, method, status), targets in LINKS.items():
        links = schema["paths"][path][method]["responses"][status]["links"]
        assert len(links) == len(targets), (path, method, status)
        for link in links.values():
            target = operations[link["operationId"]]
            path_params = {p["name"] for p in target["parameters"] if p["in"] == "path"}
            named = {k.removeprefix("path.") for k in link["parameters"]}
            assert named == path_params, link
            assert all(v.startswith("$response.body#/") for v in link["parameters"].values())


def test_the_linked_fields_are_in_the_source_response_bodies(schema: dict[str, Any]) -> None:
    """``$response.body#/kb_name`` must be a field the source answers with, or a link is dead."""
    components = schema["components"]["schemas"]
    for (path, method, status), _targets in LINKS.items():
        response = schema["paths"][path][method]["responses"][status]
        body = response["content"]["application/json"]["schema"]
        if "$ref" in body:
            body = components[body["$ref"].rsplit("/", 1)[-1]]
        properties = set(body.get("properties", {}))
        for link in response["links"].values():
            for pointer in link["parameters"].values():
                field = pointer.removeprefix("$response.body#/")
                assert not properties or field in properties, (path, status, field)


def test_links_are_added_once_and_missing_routes_are_left_out() -> None:
    schema: dict[str, Any] = {
        "paths": {
            "/knowledge_bases": {"post": {"responses": {"201": {}}}},
            "/knowledge_bases/{kb_name}": {"get": {"operationId": "get_kb"}},
        }
    }
    add_links(add_links(schema))
    links = schema["paths"]["/knowledge_bases"]["post"]["responses"]["201"]["links"]
    assert links == {
        "GetKnowledgeBases": {
            "operationId": "get_kb",
            "parameters": {"path.kb_name": "$response.body#/kb_name"},
        }
    }
