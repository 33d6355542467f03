"""A dense list shorter than its head (a KB of one document, a filter on one file) measures
relevance against the query's similarity to fixed probe texts, not against its own last hit:
measured against itself, a KB's only passage scored a dense relevance of 0 for every question.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, register_visual_encoder
from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.models.embedders import HashingEncoder
from eagle_rag.plugins.context import ComponentRegistries
from eagle_rag.plugins.encoder_registry import EncoderRegistry
from eagle_rag.plugins.payloads import QueryRequest, RetrievedHit
from eagle_rag.plugins.registries import ComponentRegistry
from eagle_rag.retrieval.background import PROBES, DenseBackground, dense_background
from eagle_rag.retrieval.fusion import RankedList, plan_relevance
from eagle_rag.retrieval.wire import search_response
from eagle_rag.settings import Settings
from tests.embedded import app_with_documents

MANUAL = (
    "# Service\n\nThe gearbox oil of the turbine is changed every two years by the service "
    "team, and the oil filter is replaced at the same visit.\n"
)


async def _one_document_app(data: str, **retrieval: object) -> EagleApp:
    """The embedded default with the bundled encoder, one KB holding one short document."""
    return await app_with_documents(data, "manual", {"service.md": MANUAL}, **retrieval)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def one_document(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    app = await _one_document_app(str(tmp_path_factory.mktemp("one-doc")))
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
@pytest.mark.parametrize(
    "retrieval",
    [{"short_list_background": False}, {"candidates": 1}],
    ids=["setting-off", "list-as-deep-as-its-head"],
)
async def test_otherwise_a_single_passage_scores_half_whatever_is_asked(
    tmp_path_factory: pytest.TempPathFactory, retrieval: dict[str, object]
) -> None:
    """The setting off, or a list that fills its head (here a head of 1), keeps the list's own
    last hit as the background: the rule this change replaces for short lists."""
    app = await _one_document_app(str(tmp_path_factory.mktemp("own-bg")), **retrieval)
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


def _registry() -> EncoderRegistry:
    encoders = EncoderRegistry(ComponentRegistry("encoder"))
    encoders.set_collection_dim("text", 2, query_encoder="q", passage_encoder="e")
    return encoders


@pytest.mark.asyncio
async def test_probes_are_embedded_once_per_encoder_and_retried_after_a_failure() -> None:
    calls: list[str] = []
    down = [True]

    async def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append("e")
        if down[0]:
            raise RuntimeError("endpoint down")
        return [[1.0, 0.0] if i % 2 else [0.0, 1.0] for i in range(len(texts))]

    background = DenseBackground(_registry(), retry_after_s=3600)
    assert await background.level("e", [1.0, 0.0], embed) is None
    assert await background.level("e", [1.0, 0.0], embed) is None  # within the back-off
    assert calls == ["e"]
    down[0] = False
    recovering = DenseBackground(_registry(), retry_after_s=0)
    down[0] = True
    assert await recovering.level("e", [1.0, 0.0], embed) is None
    down[0] = False
    assert await recovering.level("e", [1.0, 0.0], embed) == pytest.approx(1.0)
    assert await recovering.level("e", [0.0, 2.0], embed) == pytest.approx(1.0)
    assert await recovering.level("e", [1.0, 1.0, 0.0], embed) is None  # another dimension
    assert calls == ["e", "e", "e"]  # embedded once it worked, never again
    assert len(PROBES) >= 20


@pytest.mark.asyncio
async def test_a_cancelled_probe_embedding_is_tried_again() -> None:
    started = asyncio.Event()

    async def hanging(texts: Sequence[str]) -> list[list[float]]:
        started.set()
        await asyncio.sleep(3600)
        return []

    async def working(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0]] * len(texts)

    background = DenseBackground(_registry(), retry_after_s=0)
    waiting = asyncio.ensure_future(background.level("e", [1.0, 0.0], hanging))
    await started.wait()
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task() and task is not waiting:
            task.cancel()  # the shared embedding, as a shutdown would
    assert await waiting is None
    assert await background.level("e", [1.0, 0.0], working) == pytest.approx(1.0)


def test_the_probes_use_the_encoder_that_embedded_the_rows(settings: Settings) -> None:
    """A domain plugin's query encoder differs from its passage encoder; picture rows of a
    multimodal model have no text background at all."""
    encoders = _registry()
    background = DenseBackground(encoders)
    assert background.passage_encoder("text") == "e"
    assert background.passage_encoder("unknown") is None
    for provider, expected in (("summary", "hashing"), ("multimodal", None)):
        visual = {"provider": provider, "base_url": "http://127.0.0.1:9", "model": "clip"}
        config = settings.model_copy(
            update={
                "models": settings.models.model_copy(
                    update={
                        "visual_embedding": settings.models.visual_embedding.model_copy(
                            update=visual
                        )
                    }
                )
            }
        )
        registries = ComponentRegistries()
        text = HashingEncoder()
        registry = EncoderRegistry(registries.encoders)
        register_visual_encoder(config, registries, registry, text)
        assert registry.passage_encoder_for(VISUAL_COLLECTION) == (expected and text.name)


def test_rrf_fusion_embeds_no_probes(settings: Settings) -> None:
    rrf = settings.retrieval.model_copy(update={"hybrid_fusion": "rrf"})
    assert dense_background(rrf, _registry()) is None
    assert dense_background(settings.retrieval, _registry()) is not None
