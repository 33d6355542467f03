"""Same-origin checks for the UI's form posts (CSRF).

A browser sends ``Origin`` on every cross-site POST (and ``Referer`` on most); a post whose
origin is not this server's own is refused before it changes anything. GET never changes state.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request

from eagle_rag.errors import PermissionDeniedError


def check_same_origin(request: Request) -> None:
    """Raise PermissionDeniedError unless Origin (or else Referer) names this host."""
    host = request.headers.get("host", "")
    claimed = request.headers.get("origin") or request.headers.get("referer")
    if not claimed or claimed == "null":
        raise PermissionDeniedError("cross-site form posts are refused (no Origin or Referer)")
    if urlsplit(claimed).netloc.lower() != host.lower():
        raise PermissionDeniedError(
            "cross-site form posts are refused (the Origin is not this server)",
            origin=claimed[:200],
        )
