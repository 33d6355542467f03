"""FastAPI dependencies: the running EagleApp and the admitted caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from eagle_rag.api.security import NAMESPACE_FIELD, NAMESPACE_HEADER, Caller, Gatekeeper
from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import UnsupportedMediaTypeError


def eagle(request: Request) -> EagleApp:
    app: EagleApp = request.app.state.eagle
    return app


async def caller(request: Request) -> Caller:
    """Authenticate, then check every place a request may name its namespace: the
    ``X-Eagle-Namespace`` header, and the seeds' ``plugin_namespace`` in the query string or the
    JSON body (another namespace than the instance's is a 403)."""
    gate: Gatekeeper = request.app.state.gate
    client = request.client.host if request.client else None
    who = gate.admit(
        request.headers.get("authorization"), request.headers.get(NAMESPACE_HEADER), client
    )
    gate.check_namespace(request.query_params.get(NAMESPACE_FIELD))
    gate.check_namespace(await _body_namespace(request))
    return who


async def _body_namespace(request: Request) -> str | None:
    """``plugin_namespace`` of a JSON object body (the body is read once and cached: the route
    parses the same bytes); a body that is not JSON is left to the route to refuse."""
    if not request.headers.get("content-type", "").startswith("application/json"):
        return None
    try:
        body = await request.json()
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        return None
    value = body.get(NAMESPACE_FIELD) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


async def form_body(request: Request) -> None:
    """Refuse a body that is not a form (415) before its fields are checked: read as a form, a
    JSON body has no fields, and "kb_name: Field required" would hide what is wrong."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in FORM_TYPES:
        raise UnsupportedMediaTypeError(
            f"this route takes multipart/form-data (a file part or a url field, with kb_name), "
            f"not {content_type or 'a body without a Content-Type'}",
            content_type=content_type or None,
        )


App = Annotated[EagleApp, Depends(eagle)]
Who = Annotated[Caller, Depends(caller)]
FormBody = Annotated[None, Depends(form_body)]
