"""The lakehouse-bi plugin: semantic-layer files as typed, retrievable knowledge.

- on_load: registers the lakehouse Parser (dbt, MetricFlow, LookML, Cube, SQL DDL).
- PARSE: names the project root of the file's sections and writes the file's entry in the
  KB's lineage index.
- CHUNK_DOCUMENT: Core's chunker, without the section summaries that only repeat the object
  chunks beside them (``chunking.py``).
- CHUNK: gives each chunk its object's metadata (object_type, model, grain, data_type, tests,
  the file's own upstream refs, owner, tags).
- QUERY_ASSEMBLE / QUERY_DENSE_EXPAND: identifiers and glossary terms of the question.
- RETRIEVE_SUPPLEMENT / RRF_POST_MERGE: objects the question names (or its grain) come first;
  every typed hit gets its upstream/downstream from its KB's and project's lineage (completed
  documents only).
- MCP (read-only): ``lakehouse_bi_query_semantic_context`` and
  ``lakehouse_bi_retrieve_historical_analysis``.

Options (``plugins.options.lakehouse-bi``): ``project`` (the root of every path; default: the
knowledge base's name), ``glossary`` ({Chinese term: [English words]}, added to the built-in).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from eagle_rag.errors import PluginError
from eagle_rag.index.filters import Filter, all_of, in_
from eagle_rag.ingest import core_steps
from eagle_rag.ingest.knowhere.chunker import ChunkingOptions
from eagle_rag.ingest.knowhere.tree import StructureTree
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext, PluginContext
from eagle_rag.plugins.contract import DOMAIN_PRIORITY, PluginManifest
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import (
    DocumentSource,
    ParseResult,
    QueryExpansion,
    QueryHints,
    QueryRequest,
    RetrievedHit,
    TextChunk,
)
from eagle_rag.retrieval.filters import ScopedResolver, build_metadata_filter
from plugins.lakehouse_bi.chunking import without_repeating_summaries
from plugins.lakehouse_bi.enrich import enrich_chunks, with_lineage
from plugins.lakehouse_bi.exact import exact_first, named_hits
from plugins.lakehouse_bi.hints import GLOSSARY, question_terms
from plugins.lakehouse_bi.lineage import Entry, LineageIndex
from plugins.lakehouse_bi.lineage_filter import DOWNSTREAM, UPSTREAM, lineage_resolver
from plugins.lakehouse_bi.model import SemanticObject
from plugins.lakehouse_bi.parser import LakehouseParser
from plugins.lakehouse_bi.render import META_KEY
from plugins.lakehouse_bi.tools import LakehouseTools

NAMESPACE = "lakehouse-bi"
# Chunk metadata a request may filter on at the top level ({"object_type": "column"}).
# Lineage (upstream / downstream) is resolved per request from the KB's lineage index: a chunk
# stores only its own file's refs, the whole lineage is laid over hits at query time.
_SCALAR_FIELDS = (
    "object_type", "name", "name_lower", "model", "grain", "data_type", "owner", "project",
    "framework",
)  # fmt: skip
FILTER_FIELDS = dict.fromkeys(_SCALAR_FIELDS, "scalar") | {"tests": "list", "tags": "list"}


class LakehouseBiPlugin:
    """Typed dbt / MetricFlow / LookML / Cube / DDL metadata, exact-name boosts, read-only MCP."""

    manifest = PluginManifest(
        namespace=NAMESPACE,
        version="0.1.0",
        provides_mcp_tools=("query_semantic_context", "retrieve_historical_analysis"),
        description=(
            "Semantic-layer metadata (dbt, MetricFlow, LookML, Cube, SQL DDL) as typed chunks "
            "with lineage; retrieval only, never SQL execution."
        ),
    )

    def __init__(self) -> None:
        self._ctx: PluginContext | None = None
        self._index: LineageIndex | None = None
        self._bus: HookBus | None = None
        self._project = ""
        self._glossary: dict[str, tuple[str, ...]] = dict(GLOSSARY)

    # --- lifecycle ------------------------------------------------------------------------------

    def on_load(self, ctx: PluginContext) -> None:
        self._ctx = ctx
        options = ctx.options
        self._project = str(options.get("project") or "")
        extra = options.get("glossary") or {}
        if not isinstance(extra, Mapping):
            raise PluginError(
                "options.lakehouse-bi.glossary must map terms to word lists", plugin=NAMESPACE
            )
        self._glossary.update({str(k): tuple(str(w) for w in v) for k, v in extra.items()})
        if ctx.host.objects is None:
            raise PluginError("lakehouse-bi needs the host's object store", plugin=NAMESPACE)
        self._index = LineageIndex(ctx.host.objects, ctx.default_namespace, ctx.host.documents)
        ctx.register_parser("lakehouse-bi", LakehouseParser())
        for name, kind in FILTER_FIELDS.items():
            ctx.register_filter_field(name, kind)
        for direction in (UPSTREAM, DOWNSTREAM):
            resolve = lineage_resolver(self._index, direction)
            ctx.register_filter_field(direction, "resolved", resolve=resolve)

    def ensure_collections(self, ctx: PluginContext) -> None:
        """Base collections only (``eagle_text``): semantic chunks are text chunks."""

    def register_hooks(self, bus: HookBus) -> None:
        self._bus = bus
        for hook, handler in (
            (hooks.parse, self.name_project),
            (hooks.chunk_document, self.chunk_objects),
            (hooks.chunk, self.type_chunks),
            (hooks.query_assemble, self.assemble),
            (hooks.query_dense_expand, self.expand),
            (hooks.retrieve_supplement, self.supplement),
            (hooks.rrf_post_merge, self.named_first),
        ):
            bus.subscribe(
                hook, handler, plugin=NAMESPACE, priority=DOMAIN_PRIORITY, namespace=NAMESPACE
            )

    def register_mcp_tools(self, ctx: PluginContext) -> None:
        tools = LakehouseTools(
            settings=ctx.settings,
            bus=self._require(self._bus, "hook bus"),
            vectors=self._require(ctx.host.vectors, "vector store"),
            text_encoder=ctx.host.text_encoder,
            index=self._require(self._index, "lineage index"),
            terms=self.terms,
            knowledge_bases=ctx.host.knowledge_bases,
            documents=ctx.host.documents,
            encoders=ctx.host.encoders,
        )
        ctx.register_mcp_tool(
            "query_semantic_context",
            tools.query_semantic_context,
            description=(
                "For an analytics question: the relevant models, columns, metrics, measures and "
                "dimensions with their definitions, grain, tests and lineage, as a structured "
                "pack to write SQL from. Read-only; runs no SQL."
            ),
        )
        ctx.register_mcp_tool(
            "retrieve_historical_analysis",
            tools.retrieve_historical_analysis,
            description=(
                "Past analyses (reports, notebooks, Markdown write-ups) relevant to a question "
                "or that mention given models, with citations. Read-only."
            ),
        )

    def on_unload(self) -> None:
        self._ctx = None
        self._index = None
        self._bus = None

    # --- ingest ---------------------------------------------------------------------------------

    async def name_project(
        self, result: ParseResult, source: DocumentSource, ctx: HookContext
    ) -> ParseResult | None:
        """PARSE: the project heading, and this file's entry in the KB's lineage index."""
        found = result.metadata.get(META_KEY)
        if not isinstance(found, Mapping) or not result.sections:
            return None
        project = self.project_for(source)
        sections = (replace(result.sections[0], heading=project), *result.sections[1:])
        entry = Entry(
            document_id=source.document_id,
            filename=source.filename,
            project=project,
            kind=str(found.get("kind", "")),
            objects=tuple(SemanticObject.from_dict(o) for o in found.get("objects", ())),
        )
        index = self._require(self._index, "lineage index")
        await asyncio.to_thread(index.write, source.kb_name, entry)
        return replace(result, sections=sections, metadata={**result.metadata, "title": project})

    async def chunk_objects(
        self, tree: StructureTree, source: DocumentSource, options: ChunkingOptions
    ) -> tuple[TextChunk, ...] | None:
        """CHUNK_DOCUMENT: a lakehouse file (one its PARSE step indexed) is cut by Core's
        chunker, then loses the summaries that only repeat its object chunks; any other file is
        left to Core (None)."""
        index = self._require(self._index, "lineage index")
        mine = await asyncio.to_thread(index.document_entry, source.kb_name, source.document_id)
        if mine is None:
            return None
        host = self._require(self._ctx, "plugin context").host
        encoder = self._require(host.encoders, "encoder registry").get(host.text_encoder)
        chunks = await core_steps.chunk_document(tree, source, options, encoder.count_tokens)
        return without_repeating_summaries(chunks)

    async def type_chunks(
        self, chunks: tuple[TextChunk, ...], source: DocumentSource
    ) -> tuple[TextChunk, ...] | None:
        """CHUNK: each chunk gets its object's typed metadata; text, path and order untouched.

        Only this file's facts are stored: lineage from other files is added to every hit at
        query time (``named_first``), so reading the whole KB's index per file is not needed
        (it made a project's ingest quadratic in its file count)."""
        index = self._require(self._index, "lineage index")
        mine = await asyncio.to_thread(index.document_entry, source.kb_name, source.document_id)
        if mine is None:
            return None
        return enrich_chunks(chunks, mine, index.graph_of([mine]))

    def project_for(self, source: DocumentSource) -> str:
        return str(source.metadata.get("project") or self._project or source.kb_name)

    # --- query ----------------------------------------------------------------------------------

    def terms(self, text: str) -> Any:
        return question_terms(text, self._glossary)

    def assemble(self, query: QueryRequest) -> QueryHints | None:
        terms = self.terms(query.text)
        if not terms.identifiers and not terms.translations:
            return None
        return QueryHints(
            source=NAMESPACE,
            expansions=terms.translations,
            entities=terms.identifiers,
            extra={"identifiers": list(terms.identifiers)},
        )

    def expand(self, query: QueryRequest) -> QueryExpansion | None:
        """Glossary words join both queries; identifiers' parts join BM25 as written."""
        terms = self.terms(query.text)
        if not terms.identifiers and not terms.translations:
            return None
        words = " ".join(terms.translations)
        dense = f"{query.text} ({words})" if words else None
        sparse = (*terms.translations, *(i.replace(".", " ") for i in terms.identifiers))
        return QueryExpansion(dense_text=dense, sparse_terms=sparse)

    async def supplement(
        self,
        query: QueryRequest,
        hits_by_plan: Mapping[str, tuple[RetrievedHit, ...]],
        ctx: HookContext,
    ) -> tuple[RetrievedHit, ...] | None:
        """RETRIEVE_SUPPLEMENT: the chunks of the objects the question names exactly."""
        terms = self.terms(query.text)
        if not (terms.identifiers or terms.grain) or not ctx.kb_names:
            return None
        plugin_ctx = self._require(self._ctx, "plugin context")
        registries = plugin_ctx.registries
        vectors = self._require(plugin_ctx.host.vectors, "vector store")
        prior = [h for hits in hits_by_plan.values() for h in hits]

        def find() -> list[RetrievedHit]:  # a lineage filter reads the index: off the loop
            fields = registries.filter_field_kinds()
            resolve = registries.filter_resolver(ctx.kb_names)
            where = scope_filter(query, ctx.kb_names, hits_by_plan, fields, resolve)
            return list(named_hits(vectors, terms, where, prior))

        found = await asyncio.to_thread(find)
        return tuple(found) or None

    async def named_first(
        self,
        merged: tuple[RetrievedHit, ...],
        supplements: tuple[RetrievedHit, ...],
        ctx: HookContext,
    ) -> tuple[RetrievedHit, ...] | None:
        """RRF_POST_MERGE: exact-name matches lead, in their match order; every typed hit's
        lineage is refreshed from the KB's index (the chunk's own copy is as of its ingest, so
        files ingested after it are missing there)."""
        reordered = exact_first(merged, supplements)
        index = self._require(self._index, "lineage index")
        if not any(_typed(h) for h in reordered):
            return reordered if reordered != merged else None
        lineage = await asyncio.to_thread(index.graph, ctx.kb_names)
        return tuple(
            with_lineage(h, lineage.of(h.kb_name, _project(h))) if _typed(h) else h
            for h in reordered
        )

    @staticmethod
    def _require(value: Any, what: str) -> Any:
        if value is None:
            raise PluginError(
                f"lakehouse-bi needs the host's {what} (is the plugin loaded?)", plugin=NAMESPACE
            )
        return value


def _typed(hit: RetrievedHit) -> bool:
    fields = hit.metadata.get("fields")
    return isinstance(fields, Mapping) and fields.get("object_type") not in (
        None,
        "summary",
        "group",
    )


def _project(hit: RetrievedHit) -> str:
    return str(hit.metadata["fields"].get("project", ""))


def scope_filter(
    query: QueryRequest,
    kb_names: tuple[str, ...],
    hits_by_plan: Mapping[str, tuple[RetrievedHit, ...]],
    fields: Mapping[str, str] | None = None,
    resolve: ScopedResolver | None = None,
) -> Filter:
    """The request's scope for a scalar query: its KBs, documents and filters; with tags (which
    only the catalog resolves) the documents the scoped searches already returned."""
    documents: list[str] = list(query.document_ids)
    if query.tags:
        seen = {h.document_id for hits in hits_by_plan.values() for h in hits}
        documents = sorted(seen & set(documents)) if documents else sorted(seen)
        if not documents:
            documents = ["-"]  # nothing tagged came back: match nothing
    return all_of(
        in_("kb_name", kb_names),
        in_("document_id", documents) if documents else None,
        build_metadata_filter(query.filters, fields, resolve) if query.filters else None,
    )
