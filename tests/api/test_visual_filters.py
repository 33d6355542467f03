"""Metadata filters on a search that finds pictures, on a real server: ``pages`` and ``type``
narrow the image sources too (eagle_visual keeps them in ``page`` and ``chunk_type``), and the
visual plan runs instead of failing on the text collection's field names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.server import running_server, wait_for_task
from tests.ingest import visual_docs as vd

QUERY = "turbine output by region and gearbox maintenance interval"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """The report PDF: a figure (``image``) on page 1, a ruled table (``table``) on page 2."""
    with (
        running_server(tmp_path_factory.mktemp("visual-filters")) as server,
        server.client() as client,
    ):
        assert client.post("/knowledge_bases", json={"kb_name": "report"}).status_code == 201
        submitted = client.post(
            "/ingest", data={"kb_name": "report"}, files={"file": ("r.pdf", vd.report_pdf())}
        ).json()
        assert wait_for_task(client, submitted["job_id"])["status"] == "completed"
        yield client


def _search(client: httpx.Client, filters: dict[str, Any]) -> dict[str, Any]:
    body = {"query": QUERY, "kb_name": "report", "filters": filters}
    response = client.post("/search", json=body)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def _images(found: dict[str, Any]) -> set[tuple[str, int]]:
    return {(image["chunk_type"], image["page"]) for image in found["sources"]["image"]}


def _visual_steps(found: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in found["steps"] if s["name"].startswith("eagle_visual")}


def test_without_filters_both_pictures_are_found(client: httpx.Client) -> None:
    assert _images(_search(client, {})) == {("image", 1), ("table", 2)}


def test_with_images_false_keeps_a_hybrid_search_to_text(client: httpx.Client) -> None:
    """False was the field's default, so an explicit false could not turn images off."""
    body = {"query": QUERY, "kb_name": "report", "with_images": False}
    found = client.post("/search", json=body).json()
    assert found["sources"]["image"] == [] and found["sources"]["text"]
    assert not _visual_steps(found)  # no visual plan at all
    dense = {**body, "mode": "dense", "with_images": True}
    assert client.post("/search", json=dense).json()["sources"]["image"]


@pytest.mark.parametrize(
    ("filters", "images"),
    [
        ({"pages": [1, 1]}, {("image", 1)}),
        ({"pages": {"gte": 2}}, {("table", 2)}),
        ({"pages": {"gte": 3}}, set()),
        ({"type": "table"}, {("table", 2)}),
        ({"type": ["image", "code"]}, {("image", 1)}),
        # a text-only kind: the pictures are not of that kind, so none comes back
        ({"type": "text"}, set()),
        ({"pages": [1, 2], "type": "table"}, {("table", 2)}),
    ],
)
def test_pages_and_type_filters_narrow_the_pictures_and_the_visual_plan_runs(
    client: httpx.Client, filters: dict[str, Any], images: set[tuple[str, int]]
) -> None:
    found = _search(client, filters)
    assert _images(found) == images
    steps = _visual_steps(found)
    assert steps["eagle_visual:dense"] == steps["eagle_visual:sparse"] == "ok", found["steps"]
    assert "eagle_visual:plan" not in steps  # the plan was neither skipped nor failed


def test_the_text_passages_keep_the_same_filter(client: httpx.Client) -> None:
    found = _search(client, {"pages": {"gte": 2}})
    assert found["sources"]["text"]
    assert all(2 in passage["page_nums"] for passage in found["sources"]["text"])
    assert _search(client, {"type": "image"})["sources"]["text"] == []


def test_an_answer_cites_the_filtered_picture(client: httpx.Client) -> None:
    body = {"query": QUERY, "kb_name": "report", "filters": {"pages": [1, 1]}}
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    assert _images(answer.json()) == {("image", 1)}
