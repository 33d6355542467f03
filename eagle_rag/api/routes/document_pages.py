"""``POST /documents/{id}/pages/search``: the best pages of one document for a question (MCP
``core_best_pages`` answers the same)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from eagle_rag.api.deps import App, Who
from eagle_rag.api.schemas import ERRORS, QueryText
from eagle_rag.api.security import Caller
from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import InvalidInputError
from eagle_rag.retrieval.pages import PAGE_SEARCH_DEPTH, best_pages
from eagle_rag.retrieval.wire import steps_list

router = APIRouter(responses=ERRORS)


class PageSearchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: QueryText = Field(examples=["What was the 2015 revenue?"])
    top_k: int = Field(default=5, ge=1, le=50, description="Pages to return.")
    depth: int = Field(
        default=PAGE_SEARCH_DEPTH, ge=1, le=100, description="Passages searched to rank them."
    )
    mode: Literal["dense", "sparse", "hybrid"] = "hybrid"


@router.post("/documents/{document_id}/pages/search", tags=["documents"])
async def search_pages(
    document_id: str, body: PageSearchBody, app: App, who: Who
) -> dict[str, Any]:
    """Pages ranked by the passages found on them, each with that evidence and its boxes on
    the page (open it with ``GET /documents/{id}/pages/{page}``)."""
    return await document_pages(app, who, document_id, body)


async def document_pages(
    app: EagleApp, who: Caller, document_id: str, body: PageSearchBody
) -> dict[str, Any]:
    """The best pages of one document for the caller (its key must cover the document's KB):
    the answer of this route and of MCP ``core_best_pages``."""
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    if document.status == "completed" and not document.pages:
        # An empty list would read as "nothing on any page answers this".
        raise InvalidInputError(
            f"{document.filename!r} has no pages (a {document.mime_type} document): search its "
            "passages with /search (MCP: core_retrieve_text) and its document_id",
            document_id=document_id,
        )
    pages, pack = await best_pages(
        app.retrieval,
        query=body.query,
        document_id=document_id,
        kb_name=document.kb_name,
        pages=body.top_k,
        depth=body.depth,
        mode=body.mode,
        allowed_kbs=who.kb_names,
    )
    return {
        "document_id": document_id,
        "filename": document.filename,
        "query": body.query,
        "pages": [p.to_dict() for p in pages],
        "steps": steps_list(pack.steps),
    }
