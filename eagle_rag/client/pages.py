"""The best pages of one document (``POST /documents/{id}/pages/search``): the call and its typed
answer, sent by both clients' ``best_pages``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.client.calls import Call, Exchange, Mode, path_segment


@dataclass(frozen=True, slots=True)
class PageHit:
    """A page (1-based), its score, and the passages found on it with their boxes there."""

    page: int
    score: float
    evidence: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PageHit:
        return cls(
            page=int(body["page"]),
            score=float(body.get("score", 0.0)),
            evidence=tuple(body.get("evidence") or ()),
        )


@dataclass(frozen=True, slots=True)
class PageSearch:
    """A document's pages ranked for a query, best first, and the search's steps."""

    document_id: str
    filename: str
    query: str
    pages: tuple[PageHit, ...]
    steps: tuple[Mapping[str, Any], ...]
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PageSearch:
        return cls(
            document_id=str(body.get("document_id", "")),
            filename=str(body.get("filename", "")),
            query=str(body.get("query", "")),
            pages=tuple(PageHit.from_json(p) for p in body.get("pages") or ()),
            steps=tuple(body.get("steps") or ()),
            raw=dict(body),
        )


def best_pages(
    document_id: str,
    query: str,
    *,
    top_k: int | None = None,
    depth: int | None = None,
    mode: Mode | None = None,
) -> Exchange[PageSearch]:
    """None leaves the server's default (5 pages, 30 passages searched, hybrid)."""
    options = {"top_k": top_k, "depth": depth, "mode": mode}
    body = {"query": query, **{k: v for k, v in options.items() if v is not None}}
    call = Call("POST", f"/documents/{path_segment(document_id)}/pages/search", json=body)
    return Exchange(call, PageSearch.from_json)
