"""The plugin contract: a manifest that declares, and a protocol that acts.

A plugin module exports ``plugin``: a class (or zero-argument factory) whose instances have a
:class:`PluginManifest` and the lifecycle methods of :class:`Plugin`. The PluginManager creates
one instance per app, so two apps in one process never share plugin state. The manifest is
pydantic because it is an edge: third parties write it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from eagle_rag.plugins.context import PluginContext
    from eagle_rag.plugins.hookbus import HookBus

CORE_NAMESPACE = "core"
# Core's vectors live in Milvus's database "default", so no namespace may be called that: it would
# read, and delete, Core's chunks (each namespace owns its own database, ADR-001).
RESERVED_NAMESPACES = frozenset({"default"})

# Core's subscribers are fallbacks; a domain plugin at the default priority runs before them.
CORE_PRIORITY = -1000
DOMAIN_PRIORITY = 100

_NAMESPACE = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
_COLLECTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")


class PluginManifest(BaseModel):
    """What a plugin declares about itself; validated when the plugin loads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    version: str
    depends_on: tuple[str, ...] = ()
    provides_pipelines: tuple[str, ...] = ()
    provides_specialized_collections: tuple[str, ...] = ()
    # A specialized collection that is a view of another: view name -> base name. Its rows are
    # copies of base rows (same ids and documents), so what counts a document's rows (the
    # consistency check, eval's chunk count) counts the base only.
    collection_views: dict[str, str] = Field(default_factory=dict)
    # Declared MCP tools; the plugin registers them in register_mcp_tools. A plugin's tools are
    # read-only by contract (ADR-008), so declared ones are served with read-only hints.
    provides_mcp_tools: tuple[str, ...] = ()
    resource_hints: dict[str, Any] = Field(default_factory=dict)
    description: str = ""

    @field_validator("namespace")
    @classmethod
    def _namespace_shape(cls, value: str) -> str:
        return checked_namespace(value)

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not _SEMVER.match(value):
            raise ValueError(f"version {value!r} is not semver (MAJOR.MINOR.PATCH)")
        return value

    @field_validator("provides_specialized_collections")
    @classmethod
    def _collection_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _COLLECTION.match(name):
                raise ValueError(f"collection name {name!r} is not a valid Milvus name")
        return value

    @model_validator(mode="after")
    def _views_are_declared_collections(self) -> PluginManifest:
        for view, base in self.collection_views.items():
            if view not in self.provides_specialized_collections:
                raise ValueError(f"view {view!r} is not one of provides_specialized_collections")
            if not _COLLECTION.match(base) or base == view:
                raise ValueError(f"view {view!r} names an invalid base collection {base!r}")
        return self


def namespace_problem(namespace: str) -> str | None:
    """Why ``namespace`` cannot name a namespace, or None when it can.

    The shape rule keeps :func:`milvus_database_for` one-to-one: namespaces hold no underscore,
    so ``a-b`` is the only one that maps to ``a_b``, and ``default`` (Core's) is reserved."""
    if not _NAMESPACE.match(namespace):
        return f"namespace {namespace!r} must match {_NAMESPACE.pattern}"
    if namespace in RESERVED_NAMESPACES:
        return (
            f"namespace {namespace!r} is reserved (Core's vectors live in the Milvus database "
            f"of that name); choose another"
        )
    return None


def checked_namespace(namespace: str) -> str:
    """``namespace``, or ValueError saying why it cannot name one (for pydantic validators)."""
    problem = namespace_problem(namespace)
    if problem:
        raise ValueError(problem)
    return namespace


def milvus_database_for(namespace: str) -> str:
    """Map a namespace to its Milvus Database name (hyphens are not allowed there); distinct
    valid namespaces get distinct databases (see :func:`namespace_problem`)."""
    return "default" if namespace == CORE_NAMESPACE else namespace.replace("-", "_")


@runtime_checkable
class Plugin(Protocol):
    """What the PluginManager drives: declare, load, create collections, subscribe, unload."""

    manifest: PluginManifest

    def on_load(self, ctx: PluginContext) -> None:
        """Register components (encoders, parsers, engines) and read options; no hooks yet."""

    def ensure_collections(self, ctx: PluginContext) -> None:
        """Create the plugin's specialized collections if they do not exist."""

    def register_hooks(self, bus: HookBus) -> None:
        """Subscribe to hooks; Core uses CORE_PRIORITY, domain plugins DOMAIN_PRIORITY."""

    def on_unload(self) -> None:
        """Release what on_load acquired."""


@runtime_checkable
class ProvidesMcpTools(Protocol):
    """Optional: plugins that expose MCP tools (only core and the instance namespace do)."""

    def register_mcp_tools(self, ctx: PluginContext) -> None: ...
