"""The biomed MCP tools admit callers as Core's tools do: an API key reads only its KBs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from eagle_rag.api.security import NAMESPACE_HEADER
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.inrepo_plugins.test_biomed_mcp import ARTICLE

# A private document that defines a short form: its long form is the KB's text.
MEMO = "# Board memo\n\n## Background\n\nThe hexa quinase (HXQ) deal is scheduled for March.\n"
KEYS = [
    {"name": "admin", "key": "admin-key"},
    {"name": "med", "key": "med-key", "kb_names": ["med"]},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    plugins = {
        "enabled": ["eagle_rag.plugins.core_defaults", "plugins.biomed"],
        "default_namespace": "biomed",
    }
    with running_server(
        tmp_path_factory.mktemp("biomed-keys"), plugins=plugins, server={"api_keys": KEYS}
    ) as running:
        with running.client(Authorization="Bearer admin-key") as http:
            for kb in ("med", "private"):
                assert http.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
                job = http.post(
                    "/ingest",
                    data={"kb_name": kb},
                    files={"file": (f"{kb}.md", ARTICLE.encode(), "text/markdown")},
                ).json()
                assert wait_for_task(http, job["job_id"])["status"] == "completed"
            job = http.post(
                "/ingest",
                data={"kb_name": "private"},
                files={"file": ("memo.md", MEMO.encode(), "text/markdown")},
            ).json()
            assert wait_for_task(http, job["job_id"])["status"] == "completed"
        yield running


INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


def client(server: RunningServer, key: str, **headers: str) -> Client[Any]:
    headers = {"Authorization": f"Bearer {key}", **headers}
    return Client(StreamableHttpTransport(server.url + "/mcp", headers=headers))


async def test_a_restricted_key_gets_evidence_from_its_own_kbs_only(server: RunningServer) -> None:
    arguments = {"compound": "aspirin", "top_k": 10}
    async with client(server, "admin-key") as mcp:
        everything: dict[str, Any] = (
            await mcp.call_tool("biomed_retrieve_compounds", arguments)
        ).data
    assert {p["kb_name"] for p in everything["passages"]} == {"med", "private"}
    async with client(server, "med-key") as mcp:
        own: dict[str, Any] = (await mcp.call_tool("biomed_retrieve_compounds", arguments)).data
        assert own["passages"] and {p["kb_name"] for p in own["passages"]} == {"med"}
        with pytest.raises(ToolError, match="may not use knowledge base 'private'"):
            await mcp.call_tool("biomed_retrieve_compounds", {**arguments, "kb_name": "private"})


async def test_abbreviations_a_kb_taught_are_not_shown_to_keys_of_other_kbs(
    server: RunningServer,
) -> None:
    async with client(server, "admin-key") as mcp:
        admin: dict[str, Any] = (
            await mcp.call_tool("biomed_query_entities", {"text": "Is HXQ on?"})
        ).data
    assert [(e["id"], e["name"]) for e in admin["entities"]] == [("abbr:HXQ", "hexa quinase")]
    async with client(server, "med-key") as mcp:
        result = await mcp.call_tool("biomed_query_entities", {"text": "Is HXQ on?"})
        with pytest.raises(ToolError, match="names no entity"):
            await mcp.call_tool("biomed_retrieve_compounds", {"compound": "HXQ"})
    assert result.data["entities"] == []
    assert "quinase" not in str(result.content)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("biomed_query_entities", {"text": "aspirin"}),
        ("biomed_retrieve_compounds", {"compound": "aspirin"}),
    ],
)
async def test_both_tools_refuse_a_caller_of_another_namespace(
    server: RunningServer, tool: str, arguments: dict[str, Any]
) -> None:
    # Refused before any MCP message, as REST refuses it (not tool by tool).
    with pytest.raises(MCPError, match="error response"):
        async with client(server, "med-key", **{NAMESPACE_HEADER: "legal"}) as mcp:
            await mcp.call_tool(tool, arguments)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}
    accept = {"Accept": "application/json, text/event-stream"}
    refused = server.client(Authorization="Bearer med-key").post(
        "/mcp", json=initialize, headers={**accept, NAMESPACE_HEADER: "legal"}
    )
    assert refused.status_code == 403 and refused.json()["code"] == "namespace_forbidden"
    async with client(server, "med-key", **{NAMESPACE_HEADER: "biomed"}) as mcp:
        assert (await mcp.call_tool(tool, arguments)).data  # its own namespace is admitted


def test_query_entities_counts_against_the_callers_rate_limit(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    plugins = {
        "enabled": ["eagle_rag.plugins.core_defaults", "plugins.biomed"],
        "default_namespace": "biomed",
    }
    limited = {"api_keys": [{"name": "l", "key": "limited-key"}], "rate_limit_per_minute": 2}
    with running_server(
        tmp_path_factory.mktemp("biomed-rate"), plugins=plugins, server=limited
    ) as running:

        async def three_calls() -> None:
            async with client(running, "limited-key") as mcp:
                for _ in range(2):
                    await mcp.call_tool("biomed_query_entities", {"text": "aspirin"})
                with pytest.raises(ToolError, match="rate limit"):
                    await mcp.call_tool("biomed_query_entities", {"text": "aspirin"})

        asyncio.run(three_calls())
