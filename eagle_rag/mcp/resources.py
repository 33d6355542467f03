"""Knowledge bases and document structures as MCP resources (JSON), for clients that browse
before they search:

- ``eagle://knowledge_bases``: the KBs the caller may use, with document counts;
- ``eagle://knowledge_bases/{kb_name}``: one KB and its documents (id, file, status, pages);
- ``eagle://documents/{document_id}/structure``: a document's section tree (paths, levels,
  pages), the anchors its passages cite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP

from eagle_rag.api.security import Caller

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp
    from eagle_rag.db.repositories.bundle import Repositories

JSON = "application/json"
MAX_LISTED = 500  # the catalog's page size (documents.MAX_PAGE)


def register_resources(server: FastMCP, app: EagleApp, caller: Callable[[], Caller]) -> None:
    """Add Core's resources; each read admits the caller as the tools do."""
    _register_kb_list(server, app.repositories, caller)
    _register_kb(server, app.repositories, caller)
    _register_structure(server, app.repositories, caller)


def _register_kb_list(server: FastMCP, repos: Repositories, caller: Callable[[], Caller]) -> None:
    @server.resource(
        "eagle://knowledge_bases",
        name="knowledge_bases",
        description="The knowledge bases this caller may search, with document counts.",
        mime_type=JSON,
    )
    async def knowledge_bases() -> list[dict[str, Any]]:
        who = caller()

        def load() -> list[dict[str, Any]]:
            return [
                {
                    "kb_name": kb.name,
                    "description": kb.description,
                    "engine": kb.engine,
                    "documents": repos.documents.count(kb_name=kb.name),
                    "uri": f"eagle://knowledge_bases/{kb.name}",
                }
                for kb in repos.knowledge_bases.list()
                if who.kb_names is None or kb.name in who.kb_names
            ]

        return await asyncio.to_thread(load)


def _register_kb(server: FastMCP, repos: Repositories, caller: Callable[[], Caller]) -> None:
    @server.resource(
        "eagle://knowledge_bases/{kb_name}",
        name="knowledge_base",
        description="One knowledge base and its documents (id, file name, status, pages).",
        mime_type=JSON,
    )
    async def knowledge_base(kb_name: str) -> dict[str, Any]:
        caller().check_kb(kb_name)

        def load() -> dict[str, Any]:
            kb = repos.knowledge_bases.get(kb_name)
            documents = repos.documents.list(kb_name=kb_name, limit=MAX_LISTED, offset=0)
            return {
                "kb_name": kb.name,
                "description": kb.description,
                "engine": kb.engine,
                # The list stops at MAX_LISTED: the total tells an agent whether it saw them all.
                "documents_total": repos.documents.count(kb_name=kb_name),
                "documents": [
                    {
                        "document_id": d.id,
                        "filename": d.filename,
                        "status": d.status,
                        "pages": d.pages,
                        "chunk_count": d.chunk_count,
                        "structure_uri": f"eagle://documents/{d.id}/structure",
                    }
                    for d in documents
                ],
            }

        return await asyncio.to_thread(load)


def _register_structure(server: FastMCP, repos: Repositories, caller: Callable[[], Caller]) -> None:
    @server.resource(
        "eagle://documents/{document_id}/structure",
        name="document_structure",
        description="A document's section tree: paths, levels, pages and offsets.",
        mime_type=JSON,
    )
    async def document_structure(document_id: str) -> dict[str, Any]:
        who = caller()
        document = await asyncio.to_thread(repos.documents.get, document_id, within=who.kb_names)
        return {
            "document_id": document.id,
            "kb_name": document.kb_name,
            "filename": document.filename,
            "structure": dict(document.structure),
        }
