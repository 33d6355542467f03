from __future__ import annotations

import pytest

from eagle_rag.errors import ComponentError, McpToolNameError
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import ComponentRegistries, PluginContext
from eagle_rag.plugins.mcp_registry import McpToolRegistry, assert_rag_only_tool_name
from eagle_rag.plugins.registries import ComponentRegistry
from eagle_rag.settings import Settings


def test_component_names_are_owned_once() -> None:
    registry: ComponentRegistry[str] = ComponentRegistry("parser")
    registry.register("pdf", "core-pdf", owner="core")
    with pytest.raises(ComponentError, match="already registered by plugin 'core'"):
        registry.register("pdf", "other-pdf", owner="biomed")
    assert registry.get("pdf") == "core-pdf"


def test_missing_component_lists_what_exists() -> None:
    registry: ComponentRegistry[str] = ComponentRegistry("encoder")
    registry.register("e5", "x", owner="core")
    with pytest.raises(ComponentError, match=r"no encoder named 'clip' \(registered: e5\)"):
        registry.get("clip")


def test_remove_owner_drops_only_that_plugins_components() -> None:
    registry: ComponentRegistry[str] = ComponentRegistry("encoder")
    registry.register("e5", "x", owner="core")
    registry.register("pubmedbert", "y", owner="biomed")
    registry.remove_owner("biomed")
    assert registry.names() == ["e5"]


def test_mcp_tools_are_named_namespace_underscore_name() -> None:
    tools = McpToolRegistry()
    assert tools.register("lakehouse-bi", "query_semantic_context", dict, description="d") == (
        "lakehouse_bi_query_semantic_context"
    )


@pytest.mark.parametrize(
    "short_name", ["execute_sql", "send_email_report", "run_sql_query", "shell"]
)
def test_rag_only_guard_rejects_side_effect_tools(short_name: str) -> None:
    with pytest.raises(McpToolNameError, match="side effect"):
        McpToolRegistry().register("core", short_name, dict, description="d")


def test_guard_accepts_retrieval_tools() -> None:
    for name in ("core_query", "core_retrieve_text", "biomed_query_entities"):
        assert_rag_only_tool_name(name)


@pytest.mark.parametrize("short_name", ["", "Upper", "has space", "a" * 80, "-dash"])
def test_malformed_short_names_are_rejected(short_name: str) -> None:
    with pytest.raises(McpToolNameError):
        McpToolRegistry().register("core", short_name, dict, description="d")


def test_duplicate_and_undescribed_tools_are_rejected() -> None:
    tools = McpToolRegistry()
    tools.register("core", "query", dict, description="d")
    with pytest.raises(McpToolNameError, match="already registered"):
        tools.register("core", "query", dict, description="d")
    with pytest.raises(McpToolNameError, match="needs a description"):
        tools.register("core", "ingest", dict, description=" ")


def test_only_core_and_the_instance_namespace_are_exposed() -> None:
    tools = McpToolRegistry()
    tools.register("core", "query", dict, description="d")
    tools.register("biomed", "query_entities", dict, description="d")
    tools.register("lakehouse-bi", "query_semantic_context", dict, description="d")
    assert sorted(t.name for t in tools.exposed("biomed")) == [
        "biomed_query_entities",
        "core_query",
    ]
    assert [t.name for t in tools.exposed("core")] == ["core_query"]


def test_tools_the_manifest_declares_are_registered_read_only(
    settings: Settings, audit: PluginAudit
) -> None:
    registries = ComponentRegistries()
    ctx = PluginContext(
        namespace="dom",
        settings=settings,
        audit=audit,
        registries=registries,
        declared_tools=("lookup",),
    )
    ctx.register_mcp_tool("lookup", dict, description="declared")
    ctx.register_mcp_tool("extra", dict, description="not declared")
    read_only = {t.name: t.read_only for t in registries.mcp_tools}
    assert read_only == {"dom_lookup": True, "dom_extra": False}
