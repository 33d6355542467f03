"""Conditional GETs: whether a request's ``If-None-Match`` names the representation it holds."""

from __future__ import annotations


def not_modified(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` (a list of tags, weak ones compared weakly, or ``*``) names
    ``etag``: the client's copy is current, so a 304 will do (RFC 9110 §13.1.2)."""
    held = {t.strip().removeprefix("W/") for t in (if_none_match or "").split(",") if t.strip()}
    return bool(held & {etag.removeprefix("W/"), "*"})
