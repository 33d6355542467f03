"""The one table that turns the error tree into HTTP statuses, and the handlers that use it.

Bodies are always ``{code, message, details?}`` (``EagleError.to_dict``); an unexpected
exception is a 500 ``internal_error`` whose message names the exception type, never a traceback.
Every 503 carries ``Retry-After``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from eagle_rag.client.errors import error_from_event
from eagle_rag.errors import (
    AuthenticationError,
    BackendUnavailableError,
    ConflictError,
    EagleError,
    InvalidInputError,
    ModelProviderError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PluginError,
    RateLimitedError,
    SettingsError,
    UnsupportedMediaTypeError,
    UpstreamError,
    VectorStoreError,
    error_body,
)

logger = logging.getLogger(__name__)

# Most specific first: the first class an error is an instance of decides its status.
STATUS_TABLE: tuple[tuple[type[EagleError], int], ...] = (
    (PayloadTooLargeError, 413),
    (UnsupportedMediaTypeError, 415),
    (InvalidInputError, 400),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (ConflictError, 409),
    (RateLimitedError, 429),
    (BackendUnavailableError, 503),
    (ModelProviderError, 502),
    (VectorStoreError, 502),
    (UpstreamError, 502),
    (PluginError, 502),  # a plugin is a component this request depends on, and it failed
    (SettingsError, 500),  # the instance is misconfigured: nothing a client can change
)
# Any other EagleError (a bare one) means a part this request needs did not do its job, e.g.
# no subscriber embedded the query: unavailable for now, with the reason, never a bare 500.
FALLBACK_STATUS = 503
RETRY_AFTER_S = {429: 60, 503: 5}


def status_for(error: EagleError) -> int:
    for kind, status in STATUS_TABLE:
        if isinstance(error, kind):
            return status
    return FALLBACK_STATUS


def error_response(error: EagleError) -> JSONResponse:
    status = status_for(error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if status in RETRY_AFTER_S or "retry_after" in error.fields:  # e.g. a 409 that ends soon
        headers["Retry-After"] = str(error.fields.get("retry_after", RETRY_AFTER_S.get(status)))
    return ErrorJSONResponse(error.to_dict(), status_code=status, headers=headers)


class ErrorJSONResponse(JSONResponse):
    """An error body that quotes the caller's text (a tag, a filter value) can hold a lone
    surrogate, which UTF-8 cannot encode: escaped then (``\\ud800``), not a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def outage_in(body: Mapping[str, Any] | None) -> BackendUnavailableError | None:
    """The outage an answer's ``error`` body reports (``backend_unavailable``), rebuilt as the
    error it was (``error_from_event``), so the edge can answer 503 + Retry-After; None for any
    other body."""
    error = error_from_event(dict(body)) if body else None
    return error if isinstance(error, BackendUnavailableError) else None


# Messages of the frameworks below that do not tell a client what to change.
_UNCLEAR = {
    # python-multipart refuses a part header over 4 KiB (a file name of thousands of
    # characters) or a malformed body; Starlette says only this.
    "Invalid multipart data.": "the multipart body could not be read: it is malformed, or a "
    "part's header is over 4 KiB (a file name that long?)",
    # FastAPI's answer to a JSON body it cannot decode (nested past Python's recursion limit).
    "There was an error parsing the body": "the request body could not be parsed: it is not "
    "JSON, or it is nested too deeply",
}


def _problem(error: Mapping[str, Any]) -> dict[str, str]:
    """One validation error as ``{field, reason}``. A body that is not JSON at all names no
    field: its loc is the character position, which read as a field called "0"."""
    if error.get("type") == "json_invalid":
        detail = (error.get("ctx") or {}).get("error", "")
        position = error["loc"][-1] if error.get("loc") else "?"
        return {"field": "", "reason": f"the body is not valid JSON ({detail} at {position})"}
    return {
        "field": ".".join(str(p) for p in error["loc"] if p != "body"),
        "reason": _reason(error),
    }


def _reason(error: Mapping[str, Any]) -> str:
    """A validation error's reason; a text field sent where a file belongs gets a plain one
    (FastAPI says "Value error, Expected UploadFile, received: <class 'str'>")."""
    message = str(error.get("msg", ""))
    if "Expected UploadFile" in message:
        return "must be a file part (multipart, with a filename), not a text field"
    return message


def framework_error(exc: StarletteHTTPException) -> tuple[str, str]:
    """The ``(code, message)`` of a refusal by the framework itself: no such route (404), a
    method the route does not take (405), a body it could not read (400)."""
    codes = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed"}
    return codes.get(exc.status_code, "http_error"), _UNCLEAR.get(str(exc.detail), str(exc.detail))


def install_error_handlers(app: FastAPI) -> None:
    """The handlers of the error tree, of validation and of anything unexpected; the framework's
    own refusals are answered in the shape of their path's protocol (``refusals``)."""

    @app.exception_handler(EagleError)
    async def eagle_error(request: Request, exc: EagleError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(e) for e in exc.errors()]
        first = problems[0] if problems else {"field": "", "reason": "invalid request"}
        message = f"{first['field'] or 'request'}: {first['reason']}"
        body = {"code": "invalid_request", "message": message, "details": {"errors": problems}}
        # A body that is not JSON at all cannot be checked against a schema: 400, as one
        # nested too deeply to parse is; 422 is for a parsed body of the wrong shape.
        unparsable = any(e.get("type") == "json_invalid" for e in exc.errors())
        return ErrorJSONResponse(body, status_code=400 if unparsable else 422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body(exc), status_code=500)
