"""Server error bodies (``{code, message, details?}``) back into the one error tree.

A client caller catches the same classes the server raised: ``NotFoundError`` for an unknown KB,
``PermissionDeniedError`` for a KB outside the key, and so on. Each error carries the HTTP
``status``, the server's ``remote_code`` and its ``details``.
"""

from __future__ import annotations

from typing import Any

from eagle_rag.errors import (
    AuthenticationError,
    BackendUnavailableError,
    ConflictError,
    EagleError,
    InvalidInputError,
    ModelProviderError,
    NamespaceError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    UnsupportedMediaTypeError,
    UpstreamError,
    VectorStoreError,
)

_BY_CODE: dict[str, type[EagleError]] = {
    "invalid_input": InvalidInputError,
    "invalid_request": InvalidInputError,
    "payload_too_large": PayloadTooLargeError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "unauthorized": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "namespace_forbidden": NamespaceError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "rate_limited": RateLimitedError,
    "backend_unavailable": BackendUnavailableError,
    "model_provider_error": ModelProviderError,
    "upstream_error": UpstreamError,
    "vector_store_error": VectorStoreError,
}
# A body without a known code (a proxy's HTML page, an old server) is classified by status.
_BY_STATUS: dict[int, type[EagleError]] = {
    400: InvalidInputError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: InvalidInputError,
    429: RateLimitedError,
    502: UpstreamError,
    503: BackendUnavailableError,
    504: BackendUnavailableError,
}


def error_from_body(status: int, body: Any, fallback_text: str = "") -> EagleError:
    """The error tree's class for an error answer, with its message and fields."""
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        code = body["code"]
        message = str(body.get("message") or code)
        details = body.get("details") if isinstance(body.get("details"), dict) else None
    else:
        code, details = "", None
        message = fallback_text.strip()[:300] or f"the server answered HTTP {status}"
    kind = _BY_CODE.get(code) or _BY_STATUS.get(status, EagleError)
    return kind(message, status=status or None, remote_code=code or None, details=details)


def error_from_event(data: Any) -> EagleError:
    """An ``error`` event or body (``{code, message, details?}``: SSE, an answer's ``error``
    field) as the error of the tree that was raised, its details as the error's own fields: the
    server edge can raise it again and answer with the same body (a 503's ``retry_after``
    included). ``remote_code`` keeps a code the class does not carry (a bare ``EagleError``)."""
    body: dict[str, Any] = data if isinstance(data, dict) else {}
    code = str(body.get("code") or "")
    kind = _BY_CODE.get(code, EagleError)
    message = str(body.get("message") or code or data)
    details = body.get("details")
    given: dict[str, Any] = details if isinstance(details, dict) else {}
    fields = {k: v for k, v in given.items() if k != "message"}  # the message is the message
    if code and code != kind.code:
        fields["remote_code"] = code
    return kind(message, **fields)
