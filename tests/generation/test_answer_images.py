"""Which pictures an answer shows: relevant ones, or ones that illustrate a relevant text source;
never the KB's best picture for a question it has nothing to do with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from eagle_rag.generation.images import answer_images
from eagle_rag.retrieval.pack import Passage
from tests.api.server import running_server, wait_for_task
from tests.ingest import visual_docs as vd

RECIPE = b"# Baking\n\nBake the sourdough bread at 230 degrees for forty minutes with steam.\n"


def _passage(chunk_id: str, relevance: float, *, image: bool = False, **fields: Any) -> Passage:
    pages = fields.pop("pages", (1,))
    document = fields.pop("document", "doc")
    metadata = {"image_id": f"img-{chunk_id}", **fields} if image else fields
    return Passage(
        citation=0,
        chunk_id=chunk_id,
        text="",
        path="",
        page_nums=pages,
        document_id=document,
        filename="",
        kb_name="kb",
        collection="eagle_visual" if image else "eagle_text",
        type="image" if image else "text",
        score=relevance,
        scores={"relevance": relevance},
        metadata=metadata,
    )


def test_a_picture_needs_its_own_relevance_or_a_relevant_source_it_illustrates() -> None:
    relevant_text = _passage("t1", 0.8, pages=(2,))
    weak_text = _passage("t2", 0.1, pages=(5,))
    chart_on_evidence_page = _passage("v1", 0.0, image=True, pages=(2,))
    chart_on_weak_page = _passage("v2", 0.05, image=True, pages=(5,))
    anchored_to_source = _passage("v3", 0.0, image=True, pages=(9,), source_chunk_id="t1")
    good_picture = _passage("v4", 0.7, image=True, pages=(7,), document="other")
    lone_poor_picture = _passage("v5", 0.2, image=True, pages=(2,), document="other")
    ranked = [
        relevant_text,
        lone_poor_picture,
        chart_on_weak_page,
        weak_text,
        good_picture,
        chart_on_evidence_page,
        anchored_to_source,
    ]
    texts = [relevant_text, weak_text]
    kept = answer_images(ranked, texts, limit=5, min_relevance=0.3)
    assert [p.chunk_id for p in kept] == ["v4", "v1", "v3"]  # rank order, texts never
    assert [p.chunk_id for p in answer_images(ranked, texts, limit=2, min_relevance=0.3)] == [
        "v4",
        "v1",
    ]
    everything = answer_images(ranked, texts, limit=5, min_relevance=0.0)
    assert [p.chunk_id for p in everything] == ["v5", "v2", "v4", "v1", "v3"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A report PDF (a chart on page 1, a gearbox table on page 2) and a bread recipe."""
    with (
        running_server(tmp_path_factory.mktemp("answer-images")) as server,
        server.client() as client,
    ):
        assert client.post("/knowledge_bases", json={"kb_name": "mixed"}).status_code == 201
        for name, data in (("r.pdf", vd.report_pdf()), ("bread.md", RECIPE)):
            job = client.post("/ingest", data={"kb_name": "mixed"}, files={"file": (name, data)})
            assert wait_for_task(client, job.json()["job_id"])["status"] == "completed"
        yield client


def _pictures(client: httpx.Client, route: str, query: str) -> set[tuple[str, int]]:
    response = client.post(route, json={"query": query, "kb_name": "mixed"})
    assert response.status_code == 200, response.text
    return {(image["chunk_type"], image["page"]) for image in response.json()["sources"]["image"]}


def test_an_answer_about_something_else_shows_no_picture(client: httpx.Client) -> None:
    """The search still lists the KB's pictures (ranked, with their low scores); the answer
    leaves them out: the recipe's answer was shown the turbine chart and the gearbox table."""
    query = "how long do I bake sourdough bread"
    assert _pictures(client, "/search", query) == {("image", 1), ("table", 2)}
    assert _pictures(client, "/query", query) == set()


@pytest.mark.parametrize(
    ("query", "picture"),
    [
        ("turbine output by region", ("image", 1)),
        ("gearbox maintenance interval", ("table", 2)),
    ],
)
def test_an_answer_shows_the_picture_it_is_about(
    client: httpx.Client, query: str, picture: tuple[str, int]
) -> None:
    assert _pictures(client, "/query", query) == {picture}
