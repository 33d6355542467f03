"""Visual search, ``GET /images/{id}`` and MCP ``core_retrieve_visual`` against a real server
over HTTP, with API keys scoped to knowledge bases."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.types import ImageContent, TextContent
from PIL import Image

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.ingest import visual_docs as vd

ADMIN, SCOPED = "visual-admin-0123456789", "visual-scoped-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    keys = [
        {"name": "admin", "key": ADMIN},
        {"name": "scoped", "key": SCOPED, "kb_names": ["mine"]},
    ]
    with running_server(
        tmp_path_factory.mktemp("visual-http"),
        server={"api_keys": keys, "rate_limit_per_minute": 0},
    ) as running:
        state: dict[str, Any] = {"server": running}
        with running.client(Authorization=f"Bearer {ADMIN}") as admin:
            for kb in ("mine", "theirs"):
                assert admin.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
                submitted = admin.post(
                    "/ingest", data={"kb_name": kb}, files={"file": (f"{kb}.pdf", vd.report_pdf())}
                ).json()
                assert wait_for_task(admin, submitted["job_id"])["status"] == "completed"
                found = admin.post(
                    "/search", json={"query": "turbine output by region", "kb_name": kb}
                ).json()
                state[kb] = found["sources"]["image"]
        yield state


def _client(state: dict[str, Any], key: str) -> Any:
    server: RunningServer = state["server"]
    return server.client(Authorization=f"Bearer {key}")


def test_search_over_http_returns_the_figure_with_its_anchors(served: dict[str, Any]) -> None:
    figure = served["mine"][0]
    assert figure["chunk_type"] == "image" and figure["page"] == 1
    assert vd.FIGURE_CAPTION in figure["content_summary"]
    assert figure["source_chunk_id"] and figure["parent_section"]
    assert figure["url"] == f"/images/{figure['image_id']}"


def test_get_image_serves_the_picture_with_type_and_cache_headers(
    served: dict[str, Any],
) -> None:
    figure = served["mine"][0]
    with _client(served, SCOPED) as client:
        response = client.get(figure["url"])
        assert response.status_code == 200
        assert response.headers["content-type"] == "image/png"
        assert "private" in response.headers["cache-control"]
        picture = Image.open(io.BytesIO(response.content))
        assert picture.size == (figure["width"], figure["height"])
        again = client.get(figure["url"], headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304 and not again.content


def test_get_image_enforces_the_key_scope_and_rejects_bad_ids(served: dict[str, Any]) -> None:
    theirs = served["theirs"][0]
    with _client(served, SCOPED) as client:
        refused = client.get(theirs["url"])
        assert refused.status_code == 403 and "theirs" in refused.json()["message"]
        assert client.get("/images/no-such-image").status_code == 404
        bad = client.get("/images/bad%20id%22")
        assert bad.status_code == 400 and bad.json()["code"]
    server: RunningServer = served["server"]
    with server.client() as anonymous:
        assert anonymous.get(theirs["url"]).status_code == 401
    with _client(served, ADMIN) as admin:
        assert admin.get(theirs["url"]).status_code == 200


async def test_mcp_retrieve_visual_returns_image_content_and_anchors(
    served: dict[str, Any],
) -> None:
    server: RunningServer = served["server"]
    transport = StreamableHttpTransport(
        server.url + "/mcp", headers={"Authorization": f"Bearer {SCOPED}"}
    )
    async with Client(transport) as client:
        result = await client.call_tool(
            "core_retrieve_visual", {"query": "turbine output by region", "top_k": 2}
        )
    sources = result.structured_content["sources"]
    assert sources and {s["kb_name"] for s in sources} == {"mine"}  # the key's KBs only
    images = [c for c in result.content if isinstance(c, ImageContent)]
    texts = [c for c in result.content if isinstance(c, TextContent)]
    assert len(images) == len(sources) and images[0].mime_type == "image/png"
    decoded = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
    assert decoded.size == (sources[0]["width"], sources[0]["height"])
    assert sources[0]["image_id"] in texts[0].text and vd.FIGURE_CAPTION in texts[0].text


def test_health_says_visuals_are_on(served: dict[str, Any]) -> None:
    with _client(served, ADMIN) as admin:
        health = admin.get("/health").json()
    assert health["visuals"] == "on" and health["warnings"] == []


def test_health_says_why_visuals_are_off(tmp_path_factory: pytest.TempPathFactory) -> None:
    # An explicit visual_dim that the (384-d) summary encoder does not fit.
    data = tmp_path_factory.mktemp("visuals-off")
    with running_server(data, milvus={"visual_dim": 16}) as off, off.client() as client:
        health = client.get("/health").json()
    assert health["status"] == "ok" and health["visuals"] == "off"
    [warning] = health["warnings"]
    assert warning.startswith("visuals off: ") and "milvus.visual_dim is 16" in warning
