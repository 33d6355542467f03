"""Core as a plugin (namespace ``core``): Eagle-RAG's own behaviour on the same hooks as domain
plugins, subscribed at CORE_PRIORITY so that any domain subscriber runs first.

Its subscribers arrive with the ingest and query pipelines; the manifest and lifecycle are here
so that the manager always has Core to load first.
"""

from __future__ import annotations

from eagle_rag import __version__
from eagle_rag.plugins.context import PluginContext
from eagle_rag.plugins.contract import CORE_NAMESPACE, PluginManifest
from eagle_rag.plugins.hookbus import HookBus


class CorePlugin:
    """The domain-agnostic Core: knowhere (structure) and pixelrag (visual) pipelines."""

    manifest = PluginManifest(
        namespace=CORE_NAMESPACE,
        version=__version__,
        provides_pipelines=("knowhere", "pixelrag"),
        description="Domain-agnostic Core: structure-aware text and visual retrieval.",
    )

    def __init__(self) -> None:
        self._ctx: PluginContext | None = None

    def on_load(self, ctx: PluginContext) -> None:
        self._ctx = ctx

    def ensure_collections(self, ctx: PluginContext) -> None:
        """Base collections are created by the vector store itself for every namespace."""

    def register_hooks(self, bus: HookBus) -> None:
        """Core's fallback subscribers join here as the pipelines land."""

    def on_unload(self) -> None:
        self._ctx = None


plugin = CorePlugin()
