"""MCP with the fastmcp Client: over streamable HTTP at /mcp, and over stdio (`eagle-rag mcp`)."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from tests.api.server import RunningServer, running_server
from tests.ingest.documents import pdf_bytes
from tests.retrieval.conftest import SOLAR

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
CORE_TOOLS = {
    "core_ingest",
    "core_query",
    "core_retrieve_text",
    "core_retrieve_visual",
    "core_best_pages",
    "core_create_knowledge_base",
    "core_list_knowledge_bases",
    "core_get_document",
}


def http_client(server: RunningServer, key: str | None = None) -> Client[Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(StreamableHttpTransport(server.url + "/mcp", headers=headers))


async def wait_completed(client: Client[Any], document_id: str) -> dict[str, Any]:
    for _ in range(200):
        document: dict[str, Any] = (
            await client.call_tool("core_get_document", {"document_id": document_id})
        ).structured_content
        if document["status"] in ("completed", "failed"):
            return document
        await asyncio.sleep(0.1)
    raise TimeoutError(document_id)


async def test_http_tools_ingest_retrieve_and_answer(server: RunningServer) -> None:
    server.client().post("/knowledge_bases", json={"kb_name": "mcp"})
    async with http_client(server) as client:
        assert {t.name for t in await client.list_tools()} == CORE_TOOLS
        job = (
            await client.call_tool(
                "core_ingest",
                {
                    "kb_name": "mcp",
                    "filename": "solar.md",
                    "text": SOLAR,
                    "metadata": {"year": 2024},
                },
            )
        ).structured_content
        pdf = (
            await client.call_tool(
                "core_ingest",
                {
                    "kb_name": "mcp",
                    "filename": "report.pdf",
                    "content_base64": base64.b64encode(pdf_bytes()).decode(),
                },
            )
        ).structured_content
        assert (await wait_completed(client, job["document_id"]))["status"] == "completed"
        document = await wait_completed(client, pdf["document_id"])
        assert document["pages"] == 3 and document["structure"]

        found = (
            await client.call_tool(
                "core_retrieve_text", {"query": "inverter copper", "kb_names": ["mcp"]}
            )
        ).structured_content
        assert found["sources"][0]["path"] == "Solar Guide/Installation/Wiring"
        # The metadata given with the upload is there to filter by, as with REST's upload.
        filtered = await client.call_tool(
            "core_retrieve_text",
            {"query": "inverter copper", "kb_name": "mcp", "filters": {"year": 2024}},
        )
        assert {s["filename"] for s in filtered.structured_content["sources"]} == {"solar.md"}
        answer = (
            await client.call_tool(
                "core_query", {"question": "how do I connect the inverter", "kb_names": ["mcp"]}
            )
        ).structured_content
        assert "[1]" in answer["answer"] and answer["sources"]["text"]
        listed = (await client.call_tool("core_list_knowledge_bases", {})).structured_content[
            "result"
        ]
        assert {"kb_name": "mcp", "description": "", "documents": 2} in listed
        visual = (
            await client.call_tool("core_retrieve_visual", {"query": "chart"})
        ).structured_content
        assert visual == {"sources": []}
        pages = (
            await client.call_tool(
                "core_best_pages",
                {"document_id": pdf["document_id"], "query": "scope of the audit", "top_k": 2},
            )
        ).structured_content
        assert pages["document_id"] == pdf["document_id"] and pages["filename"] == "report.pdf"
        assert pages["pages"][0]["page"] == 2 and len(pages["pages"]) <= 2
        assert "audit" in pages["pages"][0]["evidence"][0]["text"]


async def test_http_tools_take_the_retrieval_options_rest_takes(server: RunningServer) -> None:
    """The docs say the retrieval options mean the same on REST and the MCP tools; the tools
    refused token_budget, expand_parents, rerank and with_images, and core_query mode and
    top_k. Each is now taken and gives what REST gives for it."""
    rest = server.client()
    rest.post("/knowledge_bases", json={"kb_name": "opts"})
    async with http_client(server) as client:
        job = await client.call_tool(
            "core_ingest", {"kb_name": "opts", "filename": "solar.md", "text": SOLAR}
        )
        assert (await wait_completed(client, job.structured_content["document_id"]))["status"]
        options: list[dict[str, Any]] = [
            {"token_budget": 40},
            {"expand_parents": False, "rerank": False, "with_images": False},
            {"mode": "sparse", "top_k": 1},
        ]
        for option in options:
            scope = {"kb_name": "opts", **option}
            found = await client.call_tool("core_retrieve_text", {"query": "inverter", **scope})
            searched = rest.post("/search", json={"query": "inverter", **scope}).json()
            assert found.structured_content["sources"] == searched["sources"]["text"], option
            answered = await client.call_tool("core_query", {"question": "inverter?", **scope})
            asked = rest.post("/query", json={"query": "inverter?", **scope}).json()
            assert answered.structured_content["sources"] == asked["sources"], option
            assert answered.structured_content["answer"] == asked["answer"], option
        assert len(answered.structured_content["sources"]["text"]) == 1  # top_k 1 was taken
        with pytest.raises(ToolError, match="token_budget: Input should be greater"):
            await client.call_tool("core_query", {"question": "x", "token_budget": 0})


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("core_retrieve_text", {"query": "x", "kb_names": ["nope"]}, "not found"),
        ("core_retrieve_text", {"query": "x", "top_k": 500}, "top_k: Input should be less"),
        ("core_retrieve_text", {"query": "x", "mode": "fuzzy"}, "^Error calling tool 'core_retri"),
        ("core_retrieve_visual", {"query": "x", "top_k": 0}, "top_k: Input should be greater"),
        ("core_query", {"question": "x", "top_n": 99}, "top_n: Input should be less"),
        ("core_query", {"question": "x", "filters": {"year": {"from": 1}}}, "range takes"),
        ("core_best_pages", {"document_id": "d", "query": "x", "depth": 0}, "depth: Input"),
        ("core_ingest", {"kb_name": "mcp", "url": "file:///etc/passwd"}, "http"),
        ("core_ingest", {"kb_name": "mcp", "url": "http://127.0.0.1:22/"}, "refusing to fetch"),
        ("core_ingest", {"kb_name": "mcp"}, "exactly one"),
        ("core_ingest", {"kb_name": "mcp", "content_base64": "%%"}, "base64"),
        ("core_get_document", {"document_id": "nope"}, "not found"),
        ("core_best_pages", {"document_id": "nope", "query": "x"}, "not found"),
    ],
)
async def test_http_tool_errors_are_clear(
    server: RunningServer, tool: str, arguments: dict[str, Any], message: str
) -> None:
    rest = server.client()
    rest.post("/knowledge_bases", json={"kb_name": "mcp"})
    sessions = len(rest.get("/sessions").json())
    async with http_client(server) as client:
        with pytest.raises(ToolError, match=message) as refused:
            await client.call_tool(tool, arguments)
    assert "pydantic" not in str(refused.value)  # field: message, not pydantic's whole report
    assert len(rest.get("/sessions").json()) == sessions  # a refused question leaves none


async def test_http_tool_schemas_declare_their_bounds(server: RunningServer) -> None:
    """An agent sees the limits before it calls, as REST's OpenAPI document shows them."""
    async with http_client(server) as client:
        tools = {t.name: t.input_schema["properties"] for t in await client.list_tools()}
    bounds = {
        ("core_retrieve_text", "top_k"): (1, 100),
        ("core_retrieve_visual", "top_k"): (1, 100),
        ("core_best_pages", "top_k"): (1, 50),
        ("core_best_pages", "depth"): (1, 100),
    }
    for (tool, field), (low, high) in bounds.items():
        assert (tools[tool][field]["minimum"], tools[tool][field]["maximum"]) == (low, high)
    top_n = tools["core_query"]["top_n"]["anyOf"][0]
    assert (top_n["minimum"], top_n["maximum"]) == (1, 20)


def test_an_mcp_session_for_another_namespace_is_refused(server: RunningServer) -> None:
    """It opened (200) and only each tool call failed; REST refuses such a request whole."""
    other = {**MCP_HEADERS, "X-Eagle-Namespace": "biomed"}
    refused = server.client().post("/mcp", json=INITIALIZE, headers=other)
    assert refused.status_code == 403 and refused.json()["code"] == "namespace_forbidden"
    own = {**MCP_HEADERS, "X-Eagle-Namespace": "core"}
    assert server.client().post("/mcp", json=INITIALIZE, headers=own).status_code == 200


async def test_http_tools_need_a_key_when_keys_are_set(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with running_server(
        tmp_path_factory.mktemp("mcp-keys"),
        server={"api_keys": [{"name": "a", "key": "k-1", "kb_names": ["alpha"]}]},
    ) as running:
        running.client(Authorization="Bearer k-1").post(
            "/knowledge_bases", json={"kb_name": "alpha"}
        )
        plain = running.client()
        refused = plain.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        wrong = plain.post(
            "/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": "Bearer x"},
        )
        assert wrong.status_code == 401 and "unknown API key" in wrong.text
        with pytest.raises(MCPError, match="error response"):  # the client cannot even connect
            async with http_client(running) as anonymous:
                await anonymous.list_tools()
        async with http_client(running, "k-1") as client:
            listed = (await client.call_tool("core_list_knowledge_bases", {})).structured_content[
                "result"
            ]
            assert [kb["kb_name"] for kb in listed] == ["alpha"]
            with pytest.raises(ToolError, match="may not use knowledge base 'beta'"):
                await client.call_tool("core_retrieve_text", {"query": "x", "kb_names": ["beta"]})


async def test_an_agent_over_stdio_starts_from_an_empty_data_dir(tmp_path: Path) -> None:
    """Over stdio the MCP process holds the data dir, so the CLI cannot make the KB that
    core_ingest needs: the agent makes it itself, as often as it likes."""
    command = shutil.which("eagle-rag", path=str(Path(sys.executable).parent))
    assert command is not None
    env = {
        **os.environ,
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
    }

    async def call(client: Client[Any], tool: str, arguments: dict[str, Any]) -> Any:
        return (await client.call_tool(tool, arguments)).structured_content

    async with Client(StdioTransport(command, ["mcp"], env=env)) as client:
        made = await call(client, "core_create_knowledge_base", {"kb_name": "notes"})
        assert made == {"kb_name": "notes", "description": "", "documents": 0, "created": True}
        job = await call(client, "core_ingest", {"kb_name": "notes", "text": SOLAR})
        assert (await wait_completed(client, job["document_id"]))["status"] == "completed"
        again = {"kb_name": "notes", "description": "other words"}
        assert await call(client, "core_create_knowledge_base", again) == {
            "kb_name": "notes",
            "description": "",  # taken as it is
            "documents": 1,
            "created": False,
        }
        found = await call(client, "core_retrieve_text", {"query": "inverter", "kb_name": "notes"})
        assert found["sources"] and found["sources"][0]["kb_name"] == "notes"
        with pytest.raises(ToolError, match="kb_name must be 1-64 lower-case letters"):
            await client.call_tool("core_create_knowledge_base", {"kb_name": "Bad Name!"})
        listed = await call(client, "core_list_knowledge_bases", {})
        assert [kb["kb_name"] for kb in listed["result"]] == ["notes"]


async def test_stdio_server(tmp_path: Path) -> None:
    command = shutil.which("eagle-rag", path=str(Path(sys.executable).parent))
    assert command is not None
    env = {
        **os.environ,
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_RAG_INGEST__CHUNK_SIZE": "48",
        "EAGLE_RAG_INGEST__CHUNK_OVERLAP": "4",
    }
    # Milvus Lite admits one process per data dir (and keeps the lock until that process
    # exits), so the KB is prepared by the CLI in its own process first.
    source = tmp_path / "solar.md"
    source.write_text(SOLAR)
    for arguments in (["kb", "create", "notes"], ["ingest", str(source), "--kb", "notes"]):
        process = await asyncio.create_subprocess_exec(
            command, *arguments, env=env, stdout=asyncio.subprocess.DEVNULL
        )
        assert await process.wait() == 0
    async with Client(StdioTransport(command, ["mcp"], env=env)) as client:
        assert {t.name for t in await client.list_tools()} == CORE_TOOLS
        found = (
            await client.call_tool(
                "core_retrieve_text", {"query": "inverter", "kb_names": ["notes"]}
            )
        ).structured_content
        assert found["sources"][0]["path"] == "Solar Guide/Installation/Wiring"
