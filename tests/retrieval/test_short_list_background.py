"""A dense list shorter than its head (a KB of one document, a filter on one file) measures
relevance against the query's similarity to fixed probe texts, not against its own last hit:
measured against itself, a KB's only passage scored a dense relevance of 0 for every question.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.plugins.payloads import QueryRequest, RetrievedHit
from eagle_rag.retrieval.background import PROBES, DenseBackground
from eagle_rag.retrieval.fusion import RankedList, plan_relevance
from eagle_rag.retrieval.wire import search_response
from eagle_rag.settings import load_settings

MANUAL = (
    "# Service\n\nThe gearbox oil of the turbine is changed every two years by the service "
    "team, and the oil filter is replaced at the same visit.\n"
)


async def _one_document_app(data: str, *, background: bool) -> EagleApp:
    """The embedded default with the bundled encoder, one KB holding one short document."""
    settings = load_settings(
        {"EAGLE_DATA_DIR": data},
        overrides={"retrieval": {"short_list_background": background}},
    )
    app = await bootstrap(settings)
    app.repositories.knowledge_bases.create("manual")
    app.ingest.submit_file(
        kb_name="manual", filename="service.md", stream=io.BytesIO(MANUAL.encode())
    )
    await app.queue.join()
    return app


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def one_document(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    app = await _one_document_app(str(tmp_path_factory.mktemp("one-doc")), background=True)
    yield app
    await app.stop()


async def _top(app: EagleApp, question: str) -> dict[str, object]:
    pack = await app.retrieval.search(QueryRequest(question, kb_names=("manual",), top_k=3))
    sources: list[dict[str, object]] = search_response(pack)["sources"]["text"]
    assert len(sources) == 1
    return sources[0]


@pytest.mark.asyncio(loop_scope="module")
async def test_the_only_passage_of_a_kb_scores_by_how_well_it_answers(
    one_document: EagleApp,
) -> None:
    answering = await _top(one_document, "How often is the gearbox oil changed?")
    # Shares "gearbox" with the passage, so BM25 finds it as its best (and only) hit.
    unrelated = await _top(one_document, "Which gearbox exhibits can children see at the museum?")
    assert answering["score"] > 0.6
    assert answering["score"] - unrelated["score"] >= 0.1


@pytest.mark.asyncio(loop_scope="module")
async def test_without_the_background_a_single_passage_scores_half_whatever_is_asked(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The setting off keeps the old rule: the measure this change replaces."""
    app = await _one_document_app(str(tmp_path_factory.mktemp("no-bg")), background=False)
    try:
        assert (await _top(app, "How often is the gearbox oil changed?"))["score"] == 0.5
    finally:
        await app.stop()


def _hit(chunk: str, score: float) -> RetrievedHit:
    return RetrievedHit(
        chunk_id=chunk,
        collection="c",
        document_id="d",
        kb_name="k",
        text="t",
        path="p",
        score=score,
        source_chunk_id=chunk,
    )


def test_a_given_background_replaces_the_lists_last_hit() -> None:
    hits = [_hit("a", 0.9), _hit("b", 0.8)]
    own = plan_relevance([RankedList("dense", hits)], head=20)
    given = plan_relevance([RankedList("dense", hits, background=0.75)], head=20)
    assert own[hits[1].dedupe_key] == 0.0
    assert given[hits[0].dedupe_key] == pytest.approx(0.6)
    assert given[hits[1].dedupe_key] == pytest.approx(0.2)


@pytest.mark.asyncio
async def test_probes_are_embedded_once_per_encoder_and_a_failure_means_no_background() -> None:
    calls: list[str] = []

    async def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append("ok")
        return [[1.0, 0.0] if i % 2 else [0.0, 1.0] for i in range(len(texts))]

    async def broken(texts: Sequence[str]) -> list[list[float]]:
        calls.append("broken")
        raise RuntimeError("endpoint down")

    background = DenseBackground()
    assert await background.level("e", [1.0, 0.0], embed) == pytest.approx(1.0)
    assert await background.level("e", [0.0, 2.0], embed) == pytest.approx(1.0)
    assert await background.level("e", [1.0, 1.0, 0.0], embed) is None  # another dimension
    assert await background.level("img", [1.0, 0.0], broken) is None
    assert await background.level("img", [1.0, 0.0], broken) is None
    assert calls == ["ok", "broken"]
    assert len(PROBES) >= 20
