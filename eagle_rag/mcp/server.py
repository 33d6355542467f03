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
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import Field, ValidationError

from eagle_rag import __version__
from eagle_rag.api.documented import first_problem
from eagle_rag.api.routes.document_pages import PageSearchBody, document_pages
from eagle_rag.api.schemas import RetrievalOptions
from eagle_rag.api.security import Caller, Gatekeeper
from eagle_rag.client.errors import error_from_event
from eagle_rag.errors import ConflictError, InvalidInputError
from eagle_rag.generation.engine import AnswerRequest
from eagle_rag.mcp.arguments import ArgumentErrors
from eagle_rag.mcp.caller import mcp_caller
from eagle_rag.mcp.resources import register_resources
from eagle_rag.mcp.schemas import ANNOTATIONS, OUTPUT_SCHEMAS, PLUGIN_TOOL_ANNOTATIONS
from eagle_rag.mcp.visual import visual_result
from eagle_rag.plugins.mcp_registry import McpToolSpec
from eagle_rag.retrieval.pack import ContextPack
from eagle_rag.retrieval.pages import PAGE_SEARCH_DEPTH
from eagle_rag.retrieval.wire import search_response

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

# The scope arguments, as REST takes them: one KB or several (both may be given).
KbName = Annotated[str | None, Field(description="One knowledge base to search.")]
KbNames = Annotated[list[str] | None, Field(description="Knowledge bases to search (all: omit).")]
Tags = Annotated[list[str] | None, Field(description="Only documents with any of these tags.")]
DocumentIds = Annotated[list[str] | None, Field(description="Only these documents.")]
Filters = Annotated[
    dict[str, Any] | None,
    Field(description='Metadata filters, e.g. {"year": {"gte": 2021}} (see retrieval.md).'),
]
# Bounds in the schema, as REST's RetrievalOptions has them: an agent reads them before it calls.
TopK = Annotated[int, Field(ge=1, le=100, description="Sources to return (1-100).")]
# The search options REST takes (RetrievalOptions, which checks them; retrieval.md says what
# they do): the docs promise the MCP tools take them too, and core_query refused them.
Mode = Literal["dense", "sparse", "hybrid"]
Rerank = Annotated[
    bool | None, Field(description="false: skip reranking (unset: rerank when configured).")
]
ExpandParents = Annotated[
    bool | None,
    Field(description="Widen passages to their parent section (unset: the server's default)."),
]
TokenBudget = Annotated[
    int | None,
    Field(ge=1, le=1_000_000, description="Trim the sources to this many tokens (1-1000000)."),
]
WithImages = Annotated[
    bool | None, Field(description=RetrievalOptions.model_fields["with_images"].description)
]


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
    server.add_middleware(ArgumentErrors())
    sync_tools(server, app)
    register_resources(server, app, tools.caller)
    return server


def sync_tools(server: FastMCP, app: EagleApp) -> None:
    """Serve every tool the registry exposes that the server does not have yet (plugins load
    after the server is built, so this runs again once the app has started)."""
    served: set[str] = getattr(server, "_eagle_tools", set())
    for spec in app.registries.mcp_tools.exposed(app.settings.plugins.default_namespace):
        if spec.name not in served:
            short = spec.name.removeprefix("core_") if spec.namespace == "core" else ""
            server.tool(
                spec.handler,
                name=spec.name,
                description=spec.description,
                annotations=ANNOTATIONS.get(short) or _plugin_hints(spec),
                output_schema=OUTPUT_SCHEMAS.get(short, ...),  # ...: derived from the handler
            )
            served.add(spec.name)
    server._eagle_tools = served  # type: ignore[attr-defined]


def _plugin_hints(spec: McpToolSpec) -> dict[str, Any] | None:
    """A declared (so read-only) plugin tool's hints; None leaves an undeclared one unhinted."""
    if spec.namespace == "core" or not spec.read_only:
        return None
    return dict(PLUGIN_TOOL_ANNOTATIONS)


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
                "http(s) URL) to a knowledge base; returns the ingest job. A document of the "
                "same filename (or URL) with other content replaces the one already there.",
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
                "best_pages",
                self.best_pages,
                "The pages of one document that best answer a query, each with the passages "
                "found on it and their boxes on the page.",
            ),
            (
                "create_knowledge_base",
                self.create_knowledge_base,
                "Make sure a knowledge base exists (built-in engine), so documents can be "
                "ingested into it; an existing one is returned as it is.",
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

    def caller(self) -> Caller:
        """The MCP caller, checked again here for scope, namespace and rate (see mcp_caller)."""
        return mcp_caller(self._gate)

    async def retrieve_text(
        self,
        query: str,
        kb_name: KbName = None,
        kb_names: KbNames = None,
        top_k: TopK = 5,
        filters: Filters = None,
        mode: Mode = "hybrid",
        tags: Tags = None,
        document_ids: DocumentIds = None,
        score_threshold: Annotated[
            float | None, Field(ge=0, le=1, description="Drop passages of lower relevance.")
        ] = None,
        rerank: Rerank = None,
        expand_parents: ExpandParents = None,
        token_budget: TokenBudget = None,
        with_images: WithImages = None,
    ) -> dict[str, Any]:
        options = _options(
            kb_name,
            kb_names,
            tags,
            document_ids,
            filters=filters,
            top_k=top_k,
            mode=mode,
            rerank=rerank,
            expand_parents=expand_parents,
            token_budget=token_budget,
            with_images=with_images,
        )
        pack = await self._search(query, options)
        result = search_response(pack, score_threshold=score_threshold)
        return {"sources": result["sources"]["text"], "route": result["route"]}

    async def retrieve_visual(
        self,
        query: str,
        kb_name: KbName = None,
        kb_names: KbNames = None,
        top_k: TopK = 5,
        tags: Tags = None,
        document_ids: DocumentIds = None,
        include_images: Annotated[
            bool, Field(description="Send each picture as image content (false: anchors only).")
        ] = True,
    ) -> ToolResult:
        options = _options(kb_name, kb_names, tags, document_ids, top_k=top_k, with_images=True)
        pack = await self._search(query, options)
        objects = self._app.objects
        return await asyncio.to_thread(visual_result, pack, objects, with_images=include_images)

    async def best_pages(
        self,
        document_id: str,
        query: str,
        top_k: Annotated[int, Field(ge=1, le=50, description="Pages to return (1-50).")] = 5,
        depth: Annotated[
            int, Field(ge=1, le=100, description="Passages searched to rank them (1-100).")
        ] = PAGE_SEARCH_DEPTH,
        mode: Literal["dense", "sparse", "hybrid"] = "hybrid",
    ) -> dict[str, Any]:
        try:
            body = PageSearchBody(query=query, top_k=top_k, depth=depth, mode=mode)
        except ValidationError as exc:
            raise first_problem(exc, "request") from None
        return await document_pages(self._app, self.caller(), document_id, body)

    async def query(
        self,
        question: str,
        kb_name: KbName = None,
        kb_names: KbNames = None,
        session_id: str | None = None,
        top_n: Annotated[
            int | None, Field(ge=1, le=20, description="Sources the model sees (1-20).")
        ] = None,
        filters: Filters = None,
        tags: Tags = None,
        document_ids: DocumentIds = None,
        top_k: Annotated[
            int | None,
            Field(
                ge=1,
                le=100,
                description="Passages recalled and reranked (1-100; unset: "
                "the server's generation.top_k).",
            ),
        ] = None,
        mode: Mode = "hybrid",
        rerank: Rerank = None,
        expand_parents: ExpandParents = None,
        token_budget: TokenBudget = None,
        with_images: WithImages = None,
    ) -> dict[str, Any]:
        who = self.caller()
        options = _options(
            kb_name,
            kb_names,
            tags,
            document_ids,
            filters=filters,
            top_k=top_k or self._app.settings.generation.top_k,
            mode=mode,
            rerank=rerank,
            expand_parents=expand_parents,
            token_budget=token_budget,
            with_images=with_images,
        )
        who.check_kbs(options.scope())
        request = AnswerRequest(options.query_request(question), top_n=top_n, session_id=session_id)
        await asyncio.to_thread(self._app.answers.validate, request, allowed_kbs=who.kb_names)
        result = await self._app.answers.answer(request, allowed_kbs=who.kb_names)
        if "answer" not in result:  # the model failed after the request was accepted
            raise error_from_event(result.get("error") or {})
        return result

    async def ingest(
        self,
        kb_name: str,
        filename: str | None = None,
        text: str | None = None,
        content_base64: str | None = None,
        url: str | None = None,
        tags: list[str] | None = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description='The document\'s metadata, filterable later: {"year": 2024}.'),
        ] = None,
    ) -> dict[str, Any]:
        self.caller().check_kb(kb_name)
        given = [v is not None for v in (text, content_base64, url)]
        if sum(given) != 1:
            raise InvalidInputError("send exactly one of text, content_base64 or url")
        if url is not None:
            submission = await asyncio.to_thread(
                self._app.ingest.submit_url,
                kb_name=kb_name,
                url=url,
                tags=tags or (),
                metadata=metadata,
            )
        else:
            data = text.encode("utf-8") if text is not None else _decode(content_base64 or "")
            submission = await asyncio.to_thread(
                self._app.ingest.submit_file,
                kb_name=kb_name,
                filename=filename or ("note.txt" if text is not None else "upload"),
                stream=io.BytesIO(data),
                tags=tags or (),
                metadata=metadata,
            )
        return submission.to_dict()

    async def create_knowledge_base(
        self,
        kb_name: Annotated[str, Field(description="lower case letters, digits, - and _")],
        description: Annotated[str, Field(max_length=2000)] = "",
    ) -> dict[str, Any]:
        """An agent launched over stdio on a data dir of its own had no way to make the KB that
        core_ingest needs (the CLI cannot open a data dir the MCP process holds). Idempotent,
        so an agent may call it before every ingest; a KB made meanwhile is taken as it is."""
        self.caller().check_kb(kb_name)
        repos = self._app.repositories
        existing = await asyncio.to_thread(repos.knowledge_bases.find, kb_name)
        created = existing is None
        if existing is None:
            try:
                existing = await self._app.knowledge.create(kb_name, description=description)
            except ConflictError:
                existing = await asyncio.to_thread(repos.knowledge_bases.get, kb_name)
                created = False
        documents = await asyncio.to_thread(repos.documents.count, kb_name=kb_name)
        return {
            "kb_name": existing.name,
            "description": existing.description,
            "documents": documents,
            "created": created,
        }

    async def list_knowledge_bases(self) -> list[dict[str, Any]]:
        who = self.caller()
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

        document = await asyncio.to_thread(
            self._app.repositories.documents.get, document_id, within=self.caller().kb_names
        )
        return {**document_out(document), "structure": dict(document.structure)}

    async def _search(self, query: str, options: RetrievalOptions) -> ContextPack:
        who = self.caller()
        who.check_kbs(options.scope())
        return await self._app.retrieval.search(
            options.query_request(query), allowed_kbs=who.kb_names
        )


def _options(
    kb_name: str | None,
    kb_names: list[str] | None,
    tags: list[str] | None,
    document_ids: list[str] | None,
    **search: Any,
) -> RetrievalOptions:
    """The request model from a tool's scope arguments (as REST takes them) and its own search
    fields; a bad value is an InvalidInputError naming the field."""
    return RetrievalOptions.checked(
        kb_name=kb_name, kb_names=kb_names, tags=tags, document_ids=document_ids, **search
    )


def _decode(content: str) -> bytes:
    try:
        return base64.b64decode(content, validate=True)
    except ValueError as exc:
        raise InvalidInputError("content_base64 is not valid base64") from exc
