"""MCP with the official ``mcp`` SDK client, over streamable HTTP (with API keys) and stdio:
annotations, output schemas, resources, REST-like scope arguments, auth and Origin checks."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.api.server import RunningServer, running_server
from tests.api.test_mcp import CORE_TOOLS, INITIALIZE, MCP_HEADERS
from tests.retrieval.conftest import GARDEN, SOLAR

KEY = "sdk-key"
SCOPED = "sdk-garden"
READ_ONLY = {
    "core_retrieve_text",
    "core_retrieve_visual",
    "core_best_pages",
    "core_list_knowledge_bases",
}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [{"name": "a", "key": KEY}, {"name": "g", "key": SCOPED, "kb_names": ["garden"]}]
    with running_server(tmp_path_factory.mktemp("mcp-sdk"), server={"api_keys": keys}) as running:
        admin = running.client(Authorization=f"Bearer {KEY}")
        for kb in ("energy", "garden"):
            admin.post("/knowledge_bases", json={"kb_name": kb})
        yield running


def sdk(server: RunningServer, key: str | None = KEY) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    return Client(streamable_http_client(server.url + "/mcp", http_client=http))


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def completed(client: Client, document_id: str) -> dict[str, Any]:
    for _ in range(300):
        document = await call(client, "core_get_document", {"document_id": document_id})
        if document["status"] in ("completed", "failed"):
            return dict(document)
        await asyncio.sleep(0.1)
    raise TimeoutError(document_id)


async def test_tools_declare_hints_and_schemas(keyed: RunningServer) -> None:
    async with sdk(keyed) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == CORE_TOOLS
    for name, tool in tools.items():
        hints = tool.annotations
        # core_ingest replaces a same-named document's content: an auto-approving client must ask.
        assert hints is not None and hints.title
        assert hints.destructive_hint is (name == "core_ingest")
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert hints.read_only_hint is (name in READ_ONLY | {"core_get_document"})
    assert tools["core_ingest"].annotations.idempotent_hint is True
    assert tools["core_create_knowledge_base"].annotations.idempotent_hint is True
    assert tools["core_ingest"].annotations.open_world_hint is True
    text_schema = tools["core_retrieve_text"].output_schema
    assert text_schema["properties"]["sources"]["items"]["properties"]["score"]["maximum"] == 1
    arguments = tools["core_retrieve_text"].input_schema["properties"]
    assert {"kb_name", "kb_names", "tags", "document_ids", "filters"} <= set(arguments)


async def test_ingest_search_answer_and_resources(keyed: RunningServer) -> None:
    async with sdk(keyed) as client:
        solar = await call(
            client,
            "core_ingest",
            {"kb_name": "energy", "filename": "solar.md", "text": SOLAR, "tags": ["howto"]},
        )
        garden = await call(
            client, "core_ingest", {"kb_name": "garden", "filename": "garden.md", "text": GARDEN}
        )
        for job in (solar, garden):
            assert (await completed(client, job["document_id"]))["status"] == "completed"

        one = await call(
            client, "core_retrieve_text", {"query": "inverter copper", "kb_name": "energy"}
        )
        assert one["sources"][0]["path"] == "Solar Guide/Installation/Wiring"
        assert 0 < one["sources"][0]["score"] <= 1
        both = await call(
            client,
            "core_retrieve_text",
            {
                "query": "brackets tomatoes",
                "kb_name": "energy",
                "kb_names": ["garden"],
                "top_k": 10,
            },
        )
        assert {s["kb_name"] for s in both["sources"]} == {"energy", "garden"}
        tagged = await call(
            client, "core_retrieve_text", {"query": "brackets tomatoes", "tags": ["howto"]}
        )
        assert {s["filename"] for s in tagged["sources"]} == {"solar.md"}
        answer = await call(
            client,
            "core_query",
            {"question": "How is the inverter connected?", "kb_name": "energy"},
        )
        assert "[1]" in answer["answer"] and answer["sources"]["text"][0]["kb_name"] == "energy"

        listed = (await client.list_resources()).resources
        assert [str(r.uri) for r in listed] == ["eagle://knowledge_bases"]
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        assert templates == {
            "eagle://knowledge_bases/{kb_name}",
            "eagle://documents/{document_id}/structure",
        }
        kb = await read_json(client, "eagle://knowledge_bases/energy")
        assert [d["filename"] for d in kb["documents"]] == ["solar.md"]
        assert kb["documents_total"] == 1  # all listed (the list stops at the catalog's page)
        structure = await read_json(client, kb["documents"][0]["structure_uri"])
        assert structure["filename"] == "solar.md" and structure["structure"]
        with pytest.raises(MCPError, match="not found"):
            await client.read_resource("eagle://knowledge_bases/nope")

    async with sdk(keyed, SCOPED) as scoped:
        kbs = await read_json(scoped, "eagle://knowledge_bases")
        assert [k["kb_name"] for k in kbs] == ["garden"]
        with pytest.raises(MCPError, match="may not use knowledge base 'energy'"):
            await scoped.read_resource("eagle://knowledge_bases/energy")
        refused = await scoped.call_tool("core_retrieve_text", {"query": "x", "kb_name": "energy"})
        assert refused.is_error and "may not use" in str(refused.content[0])
        # Another KB's document is not found, word for word as one that never existed.
        hidden, never = solar["document_id"], "0" * 32
        for tool, extra in (("core_best_pages", {"query": "inverter"}), ("core_get_document", {})):
            blocked = await scoped.call_tool(tool, {"document_id": hidden, **extra})
            missing = await scoped.call_tool(tool, {"document_id": never, **extra})
            assert blocked.is_error and "not found" in str(blocked.content[0]), tool
            assert str(blocked.content[0]).replace(hidden, never) == str(missing.content[0])
            assert "energy" not in str(blocked.content[0])
        with pytest.raises(MCPError, match="not found") as unread:
            await scoped.read_resource(f"eagle://documents/{hidden}/structure")
        assert "energy" not in str(unread.value)
        own = {"document_id": garden["document_id"], "query": "tomatoes", "top_k": 3}
        # Its own document is reached: a Markdown file is told it has no pages, not "not found".
        pageless = await scoped.call_tool("core_best_pages", own)
        assert pageless.is_error and "'garden.md' has no pages" in str(pageless.content[0])
        too_many = await scoped.call_tool("core_best_pages", {**own, "top_k": 500})
        assert too_many.is_error and "top_k" in str(too_many.content[0])


async def test_keys_and_origins_are_checked(keyed: RunningServer) -> None:
    for key in (None, "wrong"):  # the HTTP 401 fails the handshake: no tool is even listed
        with pytest.raises((MCPError, ExceptionGroup)) as refused:
            async with sdk(keyed, key) as client:
                await client.list_tools()
        assert any(isinstance(e, MCPError) for e in leaves(refused.value))
    plain = keyed.client(Authorization=f"Bearer {KEY}")
    evil = plain.post(
        "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "https://evil.example"}
    )
    assert evil.status_code == 403
    local = plain.post(
        "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://localhost:3000"}
    )
    assert local.status_code == 200


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def read_json(client: Client, uri: str) -> Any:
    import json

    contents = (await client.read_resource(uri)).contents
    return json.loads(contents[0].text)


async def test_a_scoped_key_creates_only_its_own_knowledge_bases(keyed: RunningServer) -> None:
    async with sdk(keyed, SCOPED) as client:
        refused = await client.call_tool("core_create_knowledge_base", {"kb_name": "weeds"})
        assert refused.is_error and "may not use knowledge base 'weeds'" in str(refused.content)
        own = await call(client, "core_create_knowledge_base", {"kb_name": "garden"})
        assert own["created"] is False
    async with sdk(keyed) as admin:
        listed = await call(admin, "core_list_knowledge_bases", {})
    assert "weeds" not in {kb["kb_name"] for kb in listed["result"]}


async def test_stdio_with_the_official_sdk(tmp_path: Path) -> None:
    command = shutil.which("eagle-rag", path=str(Path(sys.executable).parent))
    assert command is not None
    env = {
        **os.environ,
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_RAG_INGEST__CHUNK_SIZE": "48",
        "EAGLE_RAG_INGEST__CHUNK_OVERLAP": "4",
    }
    source = tmp_path / "solar.md"
    source.write_text(SOLAR)
    for arguments in (["kb", "create", "notes"], ["ingest", str(source), "--kb", "notes"]):
        process = await asyncio.create_subprocess_exec(
            command, *arguments, env=env, stdout=asyncio.subprocess.DEVNULL
        )
        assert await process.wait() == 0
    async with Client(StdioServerParameters(command=command, args=["mcp"], env=env)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["core_retrieve_text"].annotations.read_only_hint is True
        found = await call(client, "core_retrieve_text", {"query": "inverter", "kb_name": "notes"})
        assert found["sources"][0]["path"] == "Solar Guide/Installation/Wiring"
        kbs = await read_json(client, "eagle://knowledge_bases")
        assert kbs == [
            {
                "kb_name": "notes",
                "description": "",
                "engine": "eagle",
                "documents": 1,
                "uri": "eagle://knowledge_bases/notes",
            }
        ]
