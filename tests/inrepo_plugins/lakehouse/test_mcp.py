"""The read-only MCP tools through a real MCP client, over streamable HTTP at /mcp."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

from eagle_rag.errors import McpToolNameError
from eagle_rag.plugins.mcp_registry import McpToolRegistry
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.inrepo_plugins.lakehouse.conftest import PROJECT

FILES = (
    "models/marts/_marts__models.yml",
    "models/marts/orders.sql",
    "models/marts/customers.sql",
    "models/marts/_semantic__models.yml",
    "reports/2024_q3_refund_review.md",
    "reports/menu_margin_notes.md",
)
LAKEHOUSE = {
    "enabled": ["eagle_rag.plugins.core_defaults", "plugins.lakehouse_bi"],
    "default_namespace": "lakehouse-bi",
}
KEYS = [
    {"name": "analyst", "key": "analyst-key", "kb_names": ["warehouse"]},
    {"name": "other", "key": "other-key", "kb_names": ["elsewhere"]},
    {"name": "admin", "key": "admin-key-0123456789"},  # every KB of the namespace
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(
        tmp_path_factory.mktemp("lakehouse-mcp"),
        plugins=LAKEHOUSE,
        ingest={"chunk_size": 400, "chunk_overlap": 40},
        server={"api_keys": KEYS},
    ) as running:
        client = running.client(Authorization="Bearer analyst-key")
        assert client.post("/knowledge_bases", json={"kb_name": "warehouse"}).status_code < 300
        for relative in FILES:
            path = PROJECT / relative
            response = client.post(
                "/ingest",
                data={"kb_name": "warehouse"},
                files={"file": (path.name, path.read_bytes())},
            )
            assert response.status_code < 300, response.text
            assert wait_for_task(client, response.json()["job_id"])["status"] == "completed"
        yield running


def mcp(server: RunningServer, key: str) -> Client[Any]:
    headers = {"Authorization": f"Bearer {key}"}
    return Client(StreamableHttpTransport(server.url + "/mcp", headers=headers))


async def test_tools_are_listed_with_core_ones(server: RunningServer) -> None:
    async with mcp(server, "analyst-key") as client:
        names = {t.name for t in await client.list_tools()}
    assert {
        "lakehouse_bi_query_semantic_context",
        "lakehouse_bi_retrieve_historical_analysis",
    } <= names
    assert "core_retrieve_text" in names
    assert not any("sql" in n for n in names)


async def test_semantic_context_pack(server: RunningServer) -> None:
    async with mcp(server, "analyst-key") as client:
        result = await client.call_tool(
            "lakehouse_bi_query_semantic_context",
            {"question": "what does net_amount include?", "kb_names": ["warehouse"], "top_k": 5},
        )
    pack = result.data
    first = pack["objects"][0]
    assert (first["object_type"], first["name"], first["model"]) == (
        "column",
        "net_amount",
        "orders",
    )
    assert first["path"] == "warehouse/orders/net_amount"
    assert "excludes failed payment attempts" in first["definition"]
    assert first["source"]["filename"] == "_marts__models.yml"
    lineage = first["lineage"]
    assert lineage["of"] == "orders" and "stg_payments" in lineage["upstream"]
    assert {"customers", "orders_semantic"} <= set(lineage["downstream"])
    assert pack["identifiers"] == ["net_amount"]

    async with mcp(server, "analyst-key") as client:
        result = await client.call_tool(
            "lakehouse_bi_query_semantic_context",
            {"question": "orders mart", "kb_names": ["warehouse"], "object_types": ["model"]},
        )
    models = [o for o in result.data["objects"] if o["name"] == "orders"]
    assert models and all(o["object_type"] == "model" for o in result.data["objects"])
    assert "net_amount" in {c["name"] for c in models[0]["columns"]}


async def test_an_unknown_kb_is_not_found_as_in_cores_tools(server: RunningServer) -> None:
    """Both tools answered an empty success for a KB that does not exist."""
    async with mcp(server, "admin-key-0123456789") as client:
        for tool in (
            "lakehouse_bi_query_semantic_context",
            "lakehouse_bi_retrieve_historical_analysis",
        ):
            with pytest.raises(ToolError, match="knowledge base 'nokb' not found"):
                await client.call_tool(tool, {"question": "orders", "kb_names": ["nokb"]})


async def test_historical_analysis(server: RunningServer) -> None:
    async with mcp(server, "analyst-key") as client:
        result = await client.call_tool(
            "lakehouse_bi_retrieve_historical_analysis",
            {
                "question": "why did refunds rise in August?",
                "kb_names": ["warehouse"],
                "models": ["orders"],
            },
        )
    analyses = result.data["analyses"]
    assert analyses[0]["filename"] == "2024_q3_refund_review.md"
    assert all(a["filename"].endswith(".md") for a in analyses)  # never the semantic files
    assert any("orders" in a["mentions"] for a in analyses)


async def test_tools_admit_callers_like_core(server: RunningServer) -> None:
    async with mcp(server, "other-key") as client:
        with pytest.raises(ToolError, match="may not use knowledge base"):
            await client.call_tool(
                "lakehouse_bi_query_semantic_context",
                {"question": "net_amount", "kb_names": ["warehouse"]},
            )
    async with mcp(server, "analyst-key") as client:
        with pytest.raises(ToolError, match="object_types"):
            await client.call_tool(
                "lakehouse_bi_query_semantic_context",
                {"question": "x", "kb_names": ["warehouse"], "object_types": ["sql_query"]},
            )


def test_rag_only_guard_refuses_executing_tools() -> None:
    registry = McpToolRegistry()
    with pytest.raises(McpToolNameError, match="side effect"):
        registry.register("lakehouse-bi", "execute_sql", lambda: None, description="runs SQL")
    with pytest.raises(McpToolNameError, match="side effect"):
        registry.register("lakehouse-bi", "run_sql_query", lambda: None, description="runs SQL")
