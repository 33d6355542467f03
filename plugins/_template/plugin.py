"""A minimal, working industry plugin: a manifest, two hooks, one read-only MCP tool.

Options (``settings.plugins.options.template``):
    synonyms: {term: [expansion, ...]}  -- added to queries that mention ``term``
    keywords: [word, ...]               -- chunks that contain a word get it in ``metadata``
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import PluginContext
from eagle_rag.plugins.contract import DOMAIN_PRIORITY, PluginManifest
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import QueryHints, QueryRequest, TextChunk

NAMESPACE = "template"


class TemplatePlugin:
    """Expands queries with configured synonyms and tags chunks with configured keywords."""

    manifest = PluginManifest(
        namespace=NAMESPACE,
        version="0.1.0",
        provides_mcp_tools=("describe",),
        description="Template for industry plugins: synonyms and keyword tagging.",
    )

    def __init__(self) -> None:
        self._synonyms: Mapping[str, list[str]] = {}
        self._keywords: tuple[str, ...] = ()

    def on_load(self, ctx: PluginContext) -> None:
        self._synonyms = {k.lower(): list(v) for k, v in ctx.options.get("synonyms", {}).items()}
        self._keywords = tuple(w.lower() for w in ctx.options.get("keywords", []))

    def ensure_collections(self, ctx: PluginContext) -> None:
        """This template adds no specialized collection; a real vertical creates its own here."""

    def register_hooks(self, bus: HookBus) -> None:
        # namespace=NAMESPACE: these run only for requests in this plugin's namespace.
        bus.subscribe(
            hooks.query_assemble,
            self.expand_query,
            plugin=NAMESPACE,
            priority=DOMAIN_PRIORITY,
            namespace=NAMESPACE,
        )
        bus.subscribe(
            hooks.chunk,
            self.tag_chunks,
            plugin=NAMESPACE,
            priority=DOMAIN_PRIORITY,
            namespace=NAMESPACE,
        )

    def register_mcp_tools(self, ctx: PluginContext) -> None:
        ctx.register_mcp_tool(
            "describe",
            self.describe,
            description="Describe the template plugin's query synonyms and chunk keywords.",
        )

    def on_unload(self) -> None:
        self._synonyms = {}
        self._keywords = ()

    # --- hook subscribers -----------------------------------------------------------------------

    def expand_query(self, query: QueryRequest) -> QueryHints | None:
        """QUERY_ASSEMBLE: add synonyms of the terms a query mentions."""
        words = set(query.text.lower().split())
        expansions = tuple(
            e for term, found in self._synonyms.items() if term in words for e in found
        )
        if not expansions:
            return None
        return QueryHints(source=NAMESPACE, expansions=expansions)

    def tag_chunks(self, chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        """CHUNK: record which configured keywords a chunk contains; never touch its text."""
        return tuple(self._tag(chunk) for chunk in chunks)

    def _tag(self, chunk: TextChunk) -> TextChunk:
        text = chunk.text.lower()
        found = [word for word in self._keywords if word in text]
        if not found:
            return chunk
        return replace(chunk, metadata={**chunk.metadata, "template_keywords": found})

    def describe(self) -> dict[str, Any]:
        """MCP ``template_describe``: read-only view of this plugin's configuration."""
        return {"synonyms": dict(self._synonyms), "keywords": list(self._keywords)}
