"""OpenAPI entries for routes that read their own body.

The OpenAI facade and Dify's API parse the body themselves, after authenticating, so that every
error keeps the shape those clients expect (FastAPI would answer its own 422 before the route
runs). Their pydantic models are still the contract, so the OpenAPI document gets them here:
the request body as ``openapi_extra`` and the responses as FastAPI ``responses`` entries.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from eagle_rag.errors import InvalidInputError

JSON = "application/json"
Model = TypeVar("Model", bound=BaseModel)


def read_body(model: type[Model], raw: bytes) -> Model:
    """The route's body as ``model``; a bad one is an InvalidInputError naming the field, which
    each route renders in its clients' error shape."""
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        raise first_problem(exc, "body") from exc


def first_problem(exc: ValidationError, whole: str) -> InvalidInputError:
    """The first thing pydantic found wrong, as ``field: message`` (``whole`` when it is the
    value as a whole)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or whole
    return InvalidInputError(f"{where}: {first['msg']}", field=where)


def json_body(model: type[BaseModel], *, description: str = "") -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the required JSON request body."""
    body: dict[str, Any] = {"required": True, "content": {JSON: {"schema": inlined(model)}}}
    if description:
        body["description"] = description
    return {"requestBody": body}


def inlined(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with its ``$defs`` written in place: a ``#/$defs/...`` reference
    would point into the OpenAPI document's root, where they are not."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    resolved: dict[str, Any] = _resolved(schema, definitions, ())
    return resolved


def _resolved(node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_resolved(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        name = reference.removeprefix("#/$defs/")
        if name in seen:  # a recursive model: stop at the second visit, any object will do
            return {"type": "object"}
        return _resolved(definitions[name], definitions, (*seen, name))
    return {key: _resolved(value, definitions, seen) for key, value in node.items()}
