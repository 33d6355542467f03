"""The biomed MCP tools through a real MCP client, on a real server running the biomed profile."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

from eagle_rag.plugins.mcp_registry import assert_rag_only_tool_name
from tests.api.server import RunningServer, running_server, wait_for_task

ARTICLE = """# Aspirin after stroke

## Results
Aspirin (acetylsalicylic acid) reduced recurrent stroke in patients with atrial fibrillation.

## Conclusions
Warfarin and aspirin both lowered the risk; aspirin caused less bleeding.
"""

METFORMIN = "Metformin lowered fasting glucose in adults with type 2 diabetes over 24 weeks.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    plugins = {
        "enabled": ["eagle_rag.plugins.core_defaults", "plugins.biomed"],
        "default_namespace": "biomed",
    }
    with running_server(tmp_path_factory.mktemp("biomed-mcp"), plugins=plugins) as running:
        with running.client() as http:
            for kb, name, text in (
                ("med", "aspirin.md", ARTICLE),
                ("diabetes", "metformin.md", METFORMIN),
            ):
                assert http.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
                file = (name, text.encode(), "text/markdown")
                job = http.post("/ingest", data={"kb_name": kb}, files={"file": file}).json()
                assert wait_for_task(http, job["job_id"])["status"] == "completed"
        yield running


def client(server: RunningServer) -> Client[Any]:
    return Client(StreamableHttpTransport(server.url + "/mcp"))


async def test_biomed_tools_are_listed_and_pass_the_rag_only_guard(server: RunningServer) -> None:
    async with client(server) as mcp:
        names = {t.name for t in await mcp.list_tools()}
    assert {"biomed_query_entities", "biomed_retrieve_compounds", "core_query"} <= names
    for name in names:
        assert_rag_only_tool_name(name)


async def test_declared_plugin_tools_carry_read_only_hints(server: RunningServer) -> None:
    async with client(server) as mcp:
        tools = {t.name: t for t in await mcp.list_tools()}
    for name in ("biomed_query_entities", "biomed_retrieve_compounds"):
        hints = tools[name].annotations
        assert hints is not None, name
        assert hints.read_only_hint is True and hints.idempotent_hint is True, name
        assert hints.open_world_hint is False and hints.destructive_hint is False, name
    core_query = tools["core_query"].annotations
    assert core_query is not None and core_query.read_only_hint is False  # Core's own hints stay


async def test_query_entities_returns_ids_synonyms_mentions_and_intent(
    server: RunningServer,
) -> None:
    text = "Does type 2 diabetes mellitus (T2DM) treatment with metformin reduce mortality?"
    async with client(server) as mcp:
        result: dict[str, Any] = (await mcp.call_tool("biomed_query_entities", {"text": text})).data
    by_id = {e["id"]: e for e in result["entities"]}
    assert by_id["mesh:D008687"]["name"] == "Metformin"
    diabetes = by_id["mesh:D003924"]
    assert diabetes["mentions"][0]["surface"] == "type 2 diabetes mellitus"
    assert text[diabetes["mentions"][0]["start"] : diabetes["mentions"][0]["end"]] == (
        "type 2 diabetes mellitus"
    )
    assert result["abbreviations"] == [{"short": "T2DM", "long": "type 2 diabetes mellitus"}]
    assert "treatment" in result["intents"]


async def test_a_compounds_only_passage_is_not_scored_a_flat_half(server: RunningServer) -> None:
    """The only passage naming metformin scored exactly 0.5 whatever it said: its dense list
    was that one hit, and the hit counted as its own background (0), beside BM25's best (1).
    The tool now measures a short list from probe texts, as Core's search does."""
    async with client(server) as mcp:
        arguments = {"compound": "metformin", "kb_name": "diabetes"}
        result: dict[str, Any] = (await mcp.call_tool("biomed_retrieve_compounds", arguments)).data
    [passage] = result["passages"]
    assert "Metformin lowered fasting glucose" in passage["text"]
    assert passage["score"] > 0.5


async def test_retrieve_compounds_returns_evidence_naming_the_compound(
    server: RunningServer,
) -> None:
    async with client(server) as mcp:
        result: dict[str, Any] = (
            await mcp.call_tool("biomed_retrieve_compounds", {"compound": "aspirin", "top_k": 3})
        ).data
    assert result["compound"] == [{"id": "mesh:D001241", "name": "Aspirin"}]
    assert result["passages"]
    for passage in result["passages"]:
        assert passage["kb_name"] == "med"
        assert passage["matched_entities"] == ["mesh:D001241"]
        assert "spirin" in passage["text"]
        assert 0.0 <= passage["score"] <= 1.0  # a relevance, as Core's tools show
    assert "results" in {p["section"] for p in result["passages"]}


async def test_tools_refuse_bad_input_clearly(server: RunningServer) -> None:
    async with client(server) as mcp:
        with pytest.raises(ToolError, match="names no entity"):
            await mcp.call_tool("biomed_retrieve_compounds", {"compound": "the of and"})
        with pytest.raises(ToolError, match="must not be empty"):
            await mcp.call_tool("biomed_query_entities", {"text": "   "})
        with pytest.raises(ToolError, match="knowledge base 'nokb' not found"):
            arguments = {"compound": "aspirin", "kb_name": "nokb"}
            await mcp.call_tool("biomed_retrieve_compounds", arguments)
        empty: dict[str, Any] = (
            await mcp.call_tool("biomed_query_entities", {"text": "?!% ((( )))"})
        ).data
    assert empty["entities"] == []
