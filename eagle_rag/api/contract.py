"""The OpenAPI document's answers as the server really gives them.

FastAPI declares every 422 as its own ``HTTPValidationError`` (``{detail: [...]}``), while the
error handlers answer ``{code, message, details}`` (OpenAI's and Dify's shapes on their routes);
it declares a streamed route as JSON, and no 413 where a body is read. Clients generated from the
document parsed the wrong model. The generated schema is corrected here, by path and method, so
the routes keep their code; the API keys (``Authorization: Bearer``) are declared as a security
scheme, required on every route but ``/health`` when ``server.api_keys`` is set.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from fastapi import FastAPI

from eagle_rag.api.hosts import OPEN_PATHS  # open to probes, with API keys too
from eagle_rag.api.refusals import DIFY_PATH, OPENAI_PREFIX

SCHEME = "bearerAuth"
_FASTAPI_ERRORS = ("HTTPValidationError", "ValidationError")

# One event of the stream (what an SSE client reads): its name and its data, a JSON text.
_EVENT = {
    "type": "object",
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
    "required": ["data"],
}
_SSE = {"text/event-stream": {"schema": _EVENT}}
_BINARY = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
_PROMETHEUS = {"text/plain": {"schema": {"type": "string"}}}
# (path, method) → what its 200 really carries, in place of the JSON FastAPI assumed.
SUCCESS_CONTENT: Mapping[tuple[str, str], dict[str, Any]] = MappingProxyType(
    {
        ("/search/stream", "post"): _SSE,
        ("/query/stream", "post"): _SSE,
        ("/tasks/{job_id}/stream", "get"): _SSE,
        ("/documents/{document_id}/file", "get"): _BINARY,
        ("/metrics", "get"): _PROMETHEUS,
    }
)


def error_model(path: str) -> str:
    """The error schema a path answers with: OpenAI's under /v1, Dify's on /retrieval."""
    if path == OPENAI_PREFIX or path.startswith(OPENAI_PREFIX + "/"):
        return "OpenAIError"
    if path.rstrip("/") == DIFY_PATH:
        return "DifyError"
    return "ErrorOut"


def correct_contract(schema: dict[str, Any], *, keys_required: bool) -> dict[str, Any]:
    """Correct ``schema`` in place (idempotent) and return it."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            _correct_operation(path, method, operation, keys_required=keys_required)
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})[SCHEME] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key of server.api_keys; needed only when keys are configured",
    }
    if keys_required:
        schema["security"] = [{SCHEME: []}]
    _drop_unused(components.get("schemas", {}), schema)
    return schema


def install_contract(app: FastAPI, *, keys_required: bool) -> None:
    """Make ``app.openapi()`` answer the corrected schema."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        return correct_contract(generate(), keys_required=keys_required)

    app.openapi = openapi  # type: ignore[method-assign]


def _correct_operation(
    path: str, method: str, operation: dict[str, Any], *, keys_required: bool
) -> None:
    responses = operation.setdefault("responses", {})
    model = error_model(path)
    if "422" in responses:
        responses["422"] = _error(model, "The body or a parameter does not match the schema")
    if "requestBody" in operation:
        responses.setdefault(
            "413", _error(model, "The body is over server.max_body_bytes (a file: the upload's)")
        )
    content = SUCCESS_CONTENT.get((path, method))
    if content is not None and "200" in responses:
        responses["200"]["content"] = copy.deepcopy(content)  # the schema is the caller's
    if keys_required and path in OPEN_PATHS:
        operation["security"] = []


def _error(model: str, description: str) -> dict[str, Any]:
    reference = {"$ref": f"#/components/schemas/{model}"}
    return {"description": description, "content": {"application/json": {"schema": reference}}}


def _drop_unused(schemas: dict[str, Any], schema: dict[str, Any]) -> None:
    """Remove FastAPI's validation error models once no operation refers to them."""
    if "#/components/schemas/HTTPValidationError" not in str(schema.get("paths", {})):
        for name in _FASTAPI_ERRORS:
            schemas.pop(name, None)
