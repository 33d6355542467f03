"""What the kernel hands to hooks (HookContext) and to plugins (PluginContext)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagle_rag.errors import ComponentError
from eagle_rag.ingest.core_steps import parse_bytes
from eagle_rag.ingest.detect import detect
from eagle_rag.plugins.mcp_registry import McpToolRegistry
from eagle_rag.plugins.payloads import ParseResult
from eagle_rag.plugins.registries import ComponentRegistry
from eagle_rag.retrieval.filters import (
    FIELD_KINDS,
    RESOLVED_FIELD,
    SCALAR_FIELD,
    FieldResolver,
    FilterField,
    ScopedResolver,
    is_core_filter,
    scoped_resolver,
)

if TYPE_CHECKING:
    from eagle_rag.plugins.audit import PluginAudit
    from eagle_rag.settings import Settings


_FILTER_FIELD = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")


@dataclass(frozen=True, slots=True)
class HookContext:
    """Per-call context: the request's namespace decides which subscribers run."""

    plugin_namespace: str
    kb_names: tuple[str, ...] = ()
    document_id: str | None = None
    request_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostServices:
    """What the host lends plugins (the seed's RAG runtime API): the namespace's vector store,
    the object store and the encoder registry. Typed loosely so the kernel imports no backend."""

    vectors: Any = None
    objects: Any = None
    encoders: Any = None
    text_encoder: str = ""
    visual_encoder: str = ""  # EMBED_VISUAL's encoder; "" when visual chunks are off
    # The namespace's catalog, for a plugin's own searches: knowledge bases (``get(name)``
    # raises NotFoundError: an unknown one must fail as in Core's tools, not find nothing) and
    # documents (``ids_with_unfinished_rows``: only completed documents are evidence).
    knowledge_bases: Any = None
    documents: Any = None


@dataclass(frozen=True, slots=True)
class ComponentRegistries:
    """The registries plugins add components to; one set per application."""

    encoders: ComponentRegistry[Any] = field(default_factory=lambda: ComponentRegistry("encoder"))
    parsers: ComponentRegistry[Any] = field(default_factory=lambda: ComponentRegistry("parser"))
    knowledge_engines: ComponentRegistry[Any] = field(
        default_factory=lambda: ComponentRegistry("knowledge engine")
    )
    mcp_tools: McpToolRegistry = field(default_factory=McpToolRegistry)
    # keys requests may filter on at the top level -> kind ("scalar" | "list" | "resolved")
    filter_fields: ComponentRegistry[FilterField] = field(
        default_factory=lambda: ComponentRegistry("filter field")
    )

    def filter_field_kinds(self) -> dict[str, str]:
        """The declared filter fields, as :func:`build_metadata_filter` takes them."""
        return {r.name: r.component.kind for r in self.filter_fields}

    def filter_resolver(self, kb_names: Sequence[str]) -> ScopedResolver:
        """The resolved filter fields bound to a request's knowledge bases."""
        return scoped_resolver({r.name: r.component for r in self.filter_fields}, kb_names)


class PluginContext:
    """A plugin's view of the host: its settings and options, the audit log and the registries.

    One context per plugin, so every registration is attributed to the plugin that made it.
    """

    def __init__(
        self,
        *,
        namespace: str,
        settings: Settings,
        audit: PluginAudit,
        registries: ComponentRegistries,
        host: HostServices | None = None,
        declared_tools: Sequence[str] = (),
    ) -> None:
        self.namespace = namespace
        self.settings = settings
        self.audit = audit
        self.host = host or HostServices()
        self._registries = registries
        self._declared_tools = frozenset(declared_tools)  # the manifest's provides_mcp_tools

    @property
    def default_namespace(self) -> str:
        """The namespace this instance serves (the Milvus Database and SQL filter)."""
        return self.settings.plugins.default_namespace

    @property
    def options(self) -> Mapping[str, Any]:
        """This plugin's options (``settings.plugins.options[namespace]``), untyped to Core."""
        return self.settings.plugins.options.get(self.namespace, {})

    @property
    def registries(self) -> ComponentRegistries:
        return self._registries

    def register_encoder(self, name: str, encoder: Any) -> None:
        self._registries.encoders.register(name, encoder, owner=self.namespace)

    def register_parser(self, name: str, parser: Any) -> None:
        self._registries.parsers.register(name, parser, owner=self.namespace)

    def parse(self, data: bytes, filename: str, mime_type: str | None = None) -> ParseResult:
        """Parse a file with whichever registered Parser declares its type (any plugin's).

        The type is detected from the content, as for uploads (``mime_type`` is the declared
        one); a file no parser declares is an UnsupportedMediaTypeError-style refusal.
        """
        detected = detect(data, filename, mime_type)
        parsers = [r.component for r in self._registries.parsers]
        return parse_bytes(data, filename, detected.mime_type, parsers, self.settings.ingest)

    def register_filter_field(
        self, name: str, kind: str = SCALAR_FIELD, *, resolve: FieldResolver | None = None
    ) -> None:
        """Let requests filter on chunk metadata ``name`` at the top level of ``filters``
        (``{"object_type": "column"}``), not only under ``{"metadata": {...}}``.

        A ``resolved`` field names a fact chunks do not store as such: ``resolve`` gets the
        request's knowledge bases and values and returns the condition on stored fields."""
        if not isinstance(name, str) or not _FILTER_FIELD.match(name) or is_core_filter(name):
            raise ComponentError(
                f"filter field {name!r} must be a lower-case identifier and not one of Core's "
                "filters (source_type, year, pages, type, metadata)",
                plugin=self.namespace,
            )
        if kind not in FIELD_KINDS:
            raise ComponentError(
                f"filter field {name!r} kind must be one of {', '.join(FIELD_KINDS)}",
                plugin=self.namespace,
            )
        if (kind == RESOLVED_FIELD) != (resolve is not None):
            raise ComponentError(
                f"filter field {name!r}: a resolver is given exactly for kind 'resolved'",
                plugin=self.namespace,
            )
        self._registries.filter_fields.register(
            name, FilterField(kind, resolve), owner=self.namespace
        )

    def register_knowledge_engine(self, name: str, engine: Any) -> None:
        self._registries.knowledge_engines.register(name, engine, owner=self.namespace)

    def register_mcp_tool(self, name: str, handler: Callable[..., Any], *, description: str) -> str:
        """Register a read-only MCP tool as ``{namespace}_{name}``; returns the full name.

        A plugin's tools are read-only by contract (ADR-008); one its manifest declares in
        ``provides_mcp_tools`` is served with read-only, idempotent, closed-world hints."""
        return self._registries.mcp_tools.register(
            self.namespace,
            name,
            handler,
            description=description,
            read_only=name in self._declared_tools,
        )

    def log_decision(self, category: str, decision: str, **details: Any) -> None:
        """Audit a routing or classification decision under this plugin's name."""
        self.audit.log_decision(
            category,
            decision,
            plugin=self.namespace,
            namespace=self.default_namespace,
            **details,
        )
