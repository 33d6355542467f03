"""A refusal a middleware sends before any route runs (a body over the size cap, another
site's page, a host name the open API does not serve), in the error shape of the protocol its
path speaks: OpenAI's ``{"error": {message, type, code, param}}`` under ``/v1``, Dify's
``{error_code, error_msg}`` on ``/retrieval``, Eagle-RAG's ``{code, message, details?}``
everywhere else. Those clients read only their own shape: the ``openai`` package found no
``error.code`` in Eagle-RAG's, and Dify no ``error_msg`` to show."""

from __future__ import annotations

from typing import Any

from eagle_rag.api.asgi import Scope, Send, send_json
from eagle_rag.api.errors import status_for
from eagle_rag.api.routes.dify import dify_error_body
from eagle_rag.api.routes.openai_compat import openai_error_body
from eagle_rag.errors import EagleError

OPENAI_PREFIX = "/v1"
DIFY_PATH = "/retrieval"


async def send_refusal(scope: Scope, send: Send, error: EagleError) -> None:
    """Answer ``error`` with its status, shaped for the protocol of the request's path."""
    status = status_for(error)
    await send_json(send, status, refusal_body(str(scope.get("path", "")), error, status))


def refusal_body(path: str, error: EagleError, status: int) -> dict[str, Any]:
    if path == OPENAI_PREFIX or path.startswith(OPENAI_PREFIX + "/"):
        return {"error": openai_error_body(error, status)}
    if path.rstrip("/") == DIFY_PATH:
        # Dify's route owns its code table; the status stays this refusal's (413, 403).
        return dify_error_body(error)[0]
    return error.to_dict()
