"""Build the FastMCP server for one running app.

Core's tools are registered through the same McpToolRegistry as plugin tools, so they obey the
``{namespace}_{name}`` naming and the RAG-only guard; then every tool the registry exposes for
this instance (Core's and the default namespace's, never another namespace's) is served.
``core_ingest`` takes content or a URL, never a server path.
"""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers

from eagle_rag import __version__
from eagle_rag.api.schemas import RetrievalOptions
from eagle_rag.api.security import NAMESPACE_HEADER, Caller, Gatekeeper
from eagle_rag.errors import InvalidInputError
from eagle_rag.generation.engine import AnswerRequest
from eagle_rag.retrieval.pack import ContextPack
from eagle_rag.retrieval.wire import search_response

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp


def build_mcp(app: EagleApp, gate: Gatekeeper) -> FastMCP:
    """The MCP server; ``gate`` authenticates HTTP calls (stdio is the local user: trusted)."""
    tools = CoreTools(app, gate)
    registry = app.registries.mcp_tools
    for short_name, handler, description in tools.catalog():
        if f"core_{short_name}" not in {t.name for t in registry}:
            registry.register("core", short_name, handler, description=description)
    server = FastMCP(
        "eagle-rag",
        version=__version__,
        instructions=(
            "Eagle-RAG: cited evidence from the user's documents. Use core_retrieve_text for "
            "passages with paths and pages, core_query for an answer with [n] citations."
        ),
    )
    sync_tools(server, app)
    return server


def sync_tools(server: FastMCP, app: EagleApp) -> None:
    """Serve every tool the registry exposes that the server does not have yet (plugins load
    after the server is built, so this runs again once the app has started)."""
    served: set[str] = getattr(server, "_eagle_tools", set())
    for spec in app.registries.mcp_tools.exposed(app.settings.plugins.default_namespace):
        if spec.name not in served:
            server.tool(spec.handler, name=spec.name, description=spec.description)
            served.add(spec.name)
    server._eagle_tools = served  # type: ignore[attr-defined]


class CoreTools:
    """Core's MCP tools; each admits the caller, then uses the same services as REST."""

    def __init__(self, app: EagleApp, gate: Gatekeeper) -> None:
        self._app = app
        self._gate = gate

    def catalog(self) -> list[tuple[str, Callable[..., Any], str]]:
        return [
            (
                "ingest",
                self.ingest,
                "Add a document (text or base64 file content, or an "
                "http(s) URL) to a knowledge base; returns the ingest job.",
            ),
            (
                "query",
                self.query,
                "Answer a question from knowledge bases with [n] citations and the cited sources.",
            ),
            (
                "retrieve_text",
                self.retrieve_text,
                "Ranked text passages for a query, with document, path, page numbers and scores.",
            ),
            (
                "retrieve_visual",
                self.retrieve_visual,
                "Ranked page images, figures and tables "
                "for a query, with their page and section anchors.",
            ),
            (
                "list_knowledge_bases",
                self.list_knowledge_bases,
                "The knowledge bases this caller may search, with document counts.",
            ),
            (
                "get_document",
                self.get_document,
                "One document's metadata, status and section structure.",
            ),
        ]

    def _caller(self) -> Caller:
        headers = get_http_headers(include_all=True)  # empty over stdio
        if not headers:
            return Caller("stdio")
        return self._gate.admit(headers.get("authorization"), headers.get(NAMESPACE_HEADER), None)

    async def retrieve_text(
        self,
        query: str,
        kb_names: list[str] | None = None,
        top_k: int = 5,
        filters: dict[str, Any] | None = None,
        mode: str = "hybrid",
    ) -> dict[str, Any]:
        pack = await self._search(query, kb_names, top_k, filters, mode, with_images=False)
        result = search_response(pack)
        return {"sources": result["sources"]["text"], "route": result["route"]}

    async def retrieve_visual(
        self, query: str, kb_names: list[str] | None = None, top_k: int = 5
    ) -> dict[str, Any]:
        pack = await self._search(query, kb_names, top_k, None, "hybrid", with_images=True)
        return {"sources": search_response(pack)["sources"]["image"]}

    async def query(
        self,
        question: str,
        kb_names: list[str] | None = None,
        session_id: str | None = None,
        top_n: int | None = None,
    ) -> dict[str, Any]:
        who = self._caller()
        who.check_kbs(kb_names or ())
        top_k = self._app.settings.generation.top_k
        recall = RetrievalOptions.checked(kb_names=kb_names, top_k=top_k).query_request(question)
        request = AnswerRequest(recall, top_n=top_n, session_id=session_id)
        await asyncio.to_thread(self._app.answers.validate, request)
        return await self._app.answers.answer(request, allowed_kbs=who.kb_names)

    async def ingest(
        self,
        kb_name: str,
        filename: str | None = None,
        text: str | None = None,
        content_base64: str | None = None,
        url: str | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        self._caller().check_kb(kb_name)
        given = [v is not None for v in (text, content_base64, url)]
        if sum(given) != 1:
            raise InvalidInputError("send exactly one of text, content_base64 or url")
        if url is not None:
            submission = await asyncio.to_thread(
                self._app.ingest.submit_url, kb_name=kb_name, url=url, tags=tags or ()
            )
        else:
            data = text.encode("utf-8") if text is not None else _decode(content_base64 or "")
            submission = await asyncio.to_thread(
                self._app.ingest.submit_file,
                kb_name=kb_name,
                filename=filename or ("note.txt" if text is not None else "upload"),
                stream=io.BytesIO(data),
                tags=tags or (),
            )
        return submission.to_dict()

    async def list_knowledge_bases(self) -> list[dict[str, Any]]:
        who = self._caller()
        repos = self._app.repositories

        def listing() -> list[dict[str, Any]]:  # database reads: off the event loop
            return [
                {
                    "kb_name": kb.name,
                    "description": kb.description,
                    "documents": repos.documents.count(kb_name=kb.name),
                }
                for kb in repos.knowledge_bases.list()
                if who.kb_names is None or kb.name in who.kb_names
            ]

        return await asyncio.to_thread(listing)

    async def get_document(self, document_id: str) -> dict[str, Any]:
        from eagle_rag.api.schemas import document_out

        document = await asyncio.to_thread(self._app.repositories.documents.get, document_id)
        self._caller().check_kb(document.kb_name)
        return {**document_out(document), "structure": dict(document.structure)}

    async def _search(
        self,
        query: str,
        kb_names: list[str] | None,
        top_k: int,
        filters: dict[str, Any] | None,
        mode: str,
        *,
        with_images: bool,
    ) -> ContextPack:
        who = self._caller()
        who.check_kbs(kb_names or ())
        options = RetrievalOptions.checked(
            kb_names=kb_names, top_k=top_k, filters=filters, mode=mode, with_images=with_images
        )
        return await self._app.retrieval.search(
            options.query_request(query), allowed_kbs=who.kb_names
        )


def _decode(content: str) -> bytes:
    try:
        return base64.b64decode(content, validate=True)
    except ValueError as exc:
        raise InvalidInputError("content_base64 is not valid base64") from exc
