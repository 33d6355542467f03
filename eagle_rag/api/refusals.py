"""A refusal a middleware sends before any route runs (a body over the size cap, another
site's page, a host name the open API does not serve), in the error shape of the protocol its
path speaks: OpenAI's ``{"error": {message, type, code, param}}`` under ``/v1``, Dify's
``{error_code, error_msg}`` on ``/retrieval``, Eagle-RAG's ``{code, message, details?}``
everywhere else. Those clients read only their own shape: the ``openai`` package found no
``error.code`` in Eagle-RAG's, and Dify no ``error_msg`` to show. The framework's own refusals
(a path no route serves: 404; a method the route does not take: 405) are shaped the same way."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from eagle_rag.api.asgi import Scope, Send, send_json
from eagle_rag.api.errors import ErrorJSONResponse, framework_error, status_for
from eagle_rag.api.routes.dify import dify_error_body
from eagle_rag.api.routes.openai_compat import openai_error_body, openai_error_type
from eagle_rag.errors import EagleError, InvalidInputError, NotFoundError

OPENAI_PREFIX = "/v1"
DIFY_PATH = "/retrieval"


async def send_refusal(scope: Scope, send: Send, error: EagleError) -> None:
    """Answer ``error`` with its status, shaped for the protocol of the request's path."""
    status = status_for(error)
    await send_json(send, status, refusal_body(str(scope.get("path", "")), error, status))


def refusal_body(path: str, error: EagleError, status: int) -> dict[str, Any]:
    if _speaks_openai(path):
        return {"error": openai_error_body(error, status)}
    if _speaks_dify(path):
        # Dify's route owns its code table; the status stays this refusal's (413, 403).
        return dify_error_body(error)[0]
    return error.to_dict()


_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# The error a framework refusal stands for, where Dify has a code for it (else its 5001).
_FRAMEWORK_KINDS: Mapping[int, type[EagleError]] = MappingProxyType(
    {400: InvalidInputError, 404: NotFoundError}
)


def install_framework_refusals(app: FastAPI) -> None:
    """Answer the framework's own refusals (no such route, a method the route does not take,
    a body it could not read) as JSON in the path's protocol, with their headers (``Allow``)."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code, message = framework_error(exc)
        body = framework_refusal_body(request.url.path, code, message, exc.status_code)
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            # A mount (the UI's static files) matches no method in allowed_methods: its own
            # Allow stands then.
            allowed = allowed_methods(request) or [(headers or {}).get("Allow", "GET, HEAD")]
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return ErrorJSONResponse(body, status_code=exc.status_code, headers=headers)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route takes on this path: Starlette's ``Allow`` names only those of
    the first route that matched it (``GET`` for ``/knowledge_bases``, which also takes POST).
    Each method is tried against the routes as the router would; HEAD goes with GET
    (``HeadAsGet``)."""
    routes = request.app.router.routes
    methods = {
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    }
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def framework_refusal_body(path: str, code: str, message: str, status: int) -> dict[str, Any]:
    if _speaks_openai(path):
        kind = openai_error_type(status)
        return {"error": {"message": message, "type": kind, "code": code, "param": None}}
    if _speaks_dify(path):
        return dify_error_body(_FRAMEWORK_KINDS.get(status, EagleError)(message))[0]
    return {"code": code, "message": message}


def _speaks_openai(path: str) -> bool:
    return path == OPENAI_PREFIX or path.startswith(OPENAI_PREFIX + "/")


def _speaks_dify(path: str) -> bool:
    return path.rstrip("/") == DIFY_PATH
