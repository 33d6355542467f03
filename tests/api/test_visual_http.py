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

from eagle_rag.index.filters import eq
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.ingest import visual_docs as vd

ADMIN, SCOPED = "visual-admin-0123456789", "visual-scoped-0123456789"
TENANT = "visual-tenant-0123456789"


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
        assert "immutable" not in response.headers["cache-control"]  # ids are reused
        again = client.get(figure["url"], headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304 and not again.content
        listed = client.get(
            figure["url"], headers={"If-None-Match": f'"x", W/{again.headers["etag"]}'}
        )
        assert listed.status_code == 304


def test_a_picture_rebuilt_under_the_same_id_gets_a_new_etag(served: dict[str, Any]) -> None:
    """A rebuilt document keeps its id, so its image ids come back, maybe with other pictures
    (what the pipeline writes under the same key): a cached copy must not stay valid."""
    figure = served["mine"][0]
    server: RunningServer = served["server"]
    eagle = server.eagle
    [row] = eagle.vectors.query("eagle_visual", eq("image_id", figure["image_id"]), limit=1)
    key = row["metadata"]["object_key"]
    original = b"".join(eagle.objects.open(key))
    with _client(served, SCOPED) as client:
        before = client.get(figure["url"])
        redrawn = io.BytesIO()
        Image.new("RGB", (figure["width"], figure["height"]), "navy").save(redrawn, format="PNG")
        eagle.objects.put(key, io.BytesIO(redrawn.getvalue()), content_type="image/png")
        try:
            after = client.get(figure["url"], headers={"If-None-Match": before.headers["etag"]})
        finally:
            eagle.objects.put(key, io.BytesIO(original), content_type="image/png")
    assert after.status_code == 200 and after.content == redrawn.getvalue()
    assert after.headers["etag"] != before.headers["etag"]


def test_get_image_enforces_the_key_scope_and_rejects_bad_ids(served: dict[str, Any]) -> None:
    theirs = served["theirs"][0]
    with _client(served, SCOPED) as client:
        # Another KB's picture is not found, word for word as an id that never existed.
        hidden = client.get(theirs["url"])
        never = client.get("/images/no-such-image")
        assert hidden.status_code == never.status_code == 404
        assert hidden.json()["message"] == never.json()["message"].replace(
            "no-such-image", theirs["image_id"]
        )
        assert "theirs" not in hidden.text
        bad = client.get("/images/bad%20id%22")
        assert bad.status_code == 400 and bad.json()["code"]
    server: RunningServer = served["server"]
    with server.client() as anonymous:
        assert anonymous.get(theirs["url"]).status_code == 401
    with _client(served, ADMIN) as admin:
        assert admin.get(theirs["url"]).status_code == 200
        other = admin.get(theirs["url"], headers={"X-Eagle-Namespace": "tenant"})
        assert other.status_code == 403 and other.json()["code"] == "namespace_forbidden"


def test_another_namespace_does_not_see_the_image(tmp_path_factory: pytest.TempPathFactory) -> None:
    """An instance of another namespace over the same stores, with its own key, finds no such
    image: its eagle_visual is its own Milvus database."""
    data = tmp_path_factory.mktemp("two-namespaces")
    with running_server(data) as core, core.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "kb"}).status_code == 201
        submitted = client.post(
            "/ingest", data={"kb_name": "kb"}, files={"file": ("r.pdf", vd.report_pdf())}
        ).json()
        assert wait_for_task(client, submitted["job_id"])["status"] == "completed"
        found = client.post("/search", json={"query": "turbine output", "kb_name": "kb"}).json()
        url = found["sources"]["image"][0]["url"]
        assert client.get(url).status_code == 200
    keys = [{"name": "tenant", "key": TENANT}]
    plugins = {"default_namespace": "tenant"}
    with (
        running_server(data, server={"api_keys": keys}, plugins=plugins) as tenant,
        tenant.client(Authorization=f"Bearer {TENANT}") as client,
    ):
        missing = client.get(url)
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        refused = client.get(url, headers={"X-Eagle-Namespace": "core"})
        assert refused.status_code == 403


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
