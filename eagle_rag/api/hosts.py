"""DNS-rebinding protection for an open API.

With no API keys, anyone who can reach the port is trusted, which on 127.0.0.1 means this
machine. A web page can still reach it through DNS rebinding: its own name, re-pointed at
127.0.0.1, makes the browser treat the API as the page's origin, so the page could read every
knowledge base and post the UI's forms. Its requests carry the page's name in ``Host``; an open
API therefore answers only the names it is reached by (localhost names, the bind address and
``server.mcp_allowed_hosts``), as ``/mcp`` always does. With keys a rebinding page has no key,
and bound to every interface (0.0.0.0) the names are unknown, so no check is made then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from eagle_rag.api.asgi import Receive, Scope, Send
from eagle_rag.api.refusals import send_refusal
from eagle_rag.api.security import Gatekeeper
from eagle_rag.errors import PermissionDeniedError
from eagle_rag.settings import ServerSettings

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
EVERY_INTERFACE = ("0.0.0.0", "::", "")
OPEN_PATHS = ("/health",)  # probes name the pod or node, whatever the bind address


def host_name(host: str) -> str:
    """``Host`` without its port or a final dot, lower-case (``[::1]:8000`` -> ``::1``)."""
    try:
        return (urlsplit(f"//{host.strip()}").hostname or "").lower().rstrip(".")
    except ValueError:  # an unbalanced IPv6 bracket
        return ""


def open_host_names(server: ServerSettings) -> frozenset[str] | None:
    """The names an open API answers; None when it is bound to every interface."""
    if server.host.strip() in EVERY_INTERFACE:
        return None
    extra = (host_name(h) for h in server.mcp_allowed_hosts)
    return frozenset({*LOCAL_NAMES, host_name(server.host), *extra})


class OpenHostGuard:
    """ASGI middleware: 403 for a request to the open API under a name it does not serve."""

    def __init__(
        self, app: Callable[..., Awaitable[None]], *, gate: Gatekeeper, server: ServerSettings
    ) -> None:
        self.app = app
        self.gate = gate
        self.names = open_host_names(server)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._refused(scope):
            await send_refusal(scope, send, _forbidden(_header(scope, b"host")))
            return
        await self.app(scope, receive, send)

    def _refused(self, scope: Scope) -> bool:
        if scope["type"] != "http" or not self.gate.open or self.names is None:
            return False
        if scope.get("path") in OPEN_PATHS:
            return False
        return host_name(_header(scope, b"host")) not in self.names


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


def _forbidden(host: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"this server is not reached as {host[:100]!r}: with no API keys it answers only "
        "localhost names, its bind address and server.mcp_allowed_hosts",
        host=host[:200],
    )
