"""The biomed MCP tools admit callers as Core's tools do: an API key reads only its KBs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.inrepo_plugins.test_biomed_mcp import ARTICLE

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
        yield running


def client(server: RunningServer, key: str) -> Client[Any]:
    headers = {"Authorization": f"Bearer {key}"}
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
