"""Cross-site request forgery on the REST API.

A web page on any site can make the browser send a POST to this server as a CORS "simple"
request, with no preflight: a multipart form upload, or a POST with no body. With no API keys
(the embedded default) that request is trusted: a page could ingest a file into a KB, which
then answers questions, or queue a rebuild. The browser says where such a request comes from in
``Origin``; a request that changes something (any method but GET, HEAD and OPTIONS) from an
origin other than this server's own, a page served from this machine (``localhost``,
``127.0.0.1``, ``[::1]`` on any port: a local tool such as the MCP Inspector; an open API
trusts this machine anyway), ``server.cors_origins`` or ``server.mcp_allowed_origins`` is
refused before a route runs. Clients that are not browsers (curl, the SDKs, agents) send no
``Origin`` and are not affected; the UI's own requests carry this server's origin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from eagle_rag.api.asgi import Receive, Scope, Send
from eagle_rag.api.refusals import send_refusal
from eagle_rag.errors import PermissionDeniedError

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class CrossSiteGuard:
    """ASGI middleware: 403 for a state-changing request from another site's page."""

    def __init__(
        self, app: Callable[..., Awaitable[None]], *, allowed_origins: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.allowed = frozenset(o.rstrip("/").lower() for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = self._foreign_origin(scope)
        if origin is not None:
            await send_refusal(scope, send, _forbidden(origin))
            return
        await self.app(scope, receive, send)

    def _foreign_origin(self, scope: Scope) -> str | None:
        """The request's Origin when it is another site's, else None."""
        if scope["type"] != "http" or scope.get("method", "GET") in SAFE_METHODS:
            return None
        headers: dict[bytes, str] = {k.lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get(b"origin")
        if origin is None:  # not a browser, or a same-origin GET-like request
            return None
        if origin.rstrip("/").lower() in self.allowed:
            return None
        if origin == "null":  # a sandboxed frame, a file: page
            return origin
        parts = urlsplit(origin)
        if parts.netloc.lower() == headers.get(b"host", "").lower():
            return None
        return None if (parts.hostname or "") in LOOPBACK_NAMES else origin


def _forbidden(origin: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        "a cross-site request is refused: its Origin is neither this server, a page of this "
        "machine, nor one of server.cors_origins",
        origin=origin[:200],
    )
