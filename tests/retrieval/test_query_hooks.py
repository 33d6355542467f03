"""Plugins on every retrieval hook change the result as intended; failures degrade, not raise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index.collections import VISUAL_COLLECTION, CollectionSpec
from eagle_rag.models.rerankers import HttpReranker
from eagle_rag.plugins import hooks
from eagle_rag.plugins.contract import DOMAIN_PRIORITY
from eagle_rag.plugins.payloads import (
    CollectionQueryPlan,
    EmbedRequest,
    QueryExpansion,
    QueryHints,
    QueryRequest,
    QueryRouteDecision,
    RetrievedHit,
    VisualFilter,
)
from eagle_rag.retrieval.pack import ContextPack
from tests.http_fakes import json_answer, serve
from tests.retrieval.conftest import Corpus
from tests.retrieval.test_rerankers import rerank_server

pytestmark = pytest.mark.asyncio(loop_scope="module")
PLUGIN = "probe"


@pytest.fixture
def subscribe(app: EagleApp) -> Iterator[Any]:
    """Subscribe handlers as plugin ``probe``; everything is unsubscribed after the test."""

    def add(hook: Any, handler: Any) -> None:
        app.bus.subscribe(hook, handler, plugin=PLUGIN, priority=DOMAIN_PRIORITY)

    yield add
    app.bus.unsubscribe_plugin(PLUGIN)


async def search(app: EagleApp, text: str, **options: Any) -> ContextPack:
    return await app.retrieval.search(QueryRequest(text, **options))


def steps(pack: ContextPack) -> dict[str, tuple[str, str]]:
    return {s.name: (s.status, s.detail) for s in pack.steps}


async def test_query_assemble_hints_reach_classify_query(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    seen: list[tuple[QueryHints, ...]] = []
    subscribe(hooks.query_assemble, lambda query: QueryHints("probe", entities=("inverter",)))

    def classify(query: QueryRequest, hints: tuple[QueryHints, ...]) -> None:
        seen.append(hints)

    subscribe(hooks.classify_query, classify)
    pack = await search(app, "panels", kb_names=("alpha",))
    assert seen[0][0].entities == ("inverter",)
    assert steps(pack)["query_assemble"] == ("ok", "probe")
    assert pack.route is not None and pack.route.classifier == "core"  # abstained: Core routes


async def test_classify_query_chooses_the_plans(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    def dense_only(query: QueryRequest) -> QueryRouteDecision:
        plan = CollectionQueryPlan("eagle_text", app.text_encoder.name, 5, hybrid=False)
        return QueryRouteDecision((plan,), classifier=PLUGIN, reason="dense only")

    subscribe(hooks.classify_query, dense_only)
    pack = await search(app, "inverter", kb_names=("alpha",))
    assert pack.route is not None and pack.route.classifier == PLUGIN
    assert "eagle_text:sparse" not in steps(pack)
    assert all("sparse" not in p.scores for p in pack.passages)


async def test_query_dense_expand_adds_sparse_terms(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    request: dict[str, Any] = {"kb_names": ("beta",), "mode": "sparse", "top_k": 1}
    assert (await search(app, "zzzz", **request)).passages == ()
    expansion = QueryExpansion(sparse_terms=("compost",), hints={"why": ["garden", "soil"]})
    subscribe(hooks.query_dense_expand, lambda: expansion)
    pack = await search(app, "zzzz", **request)
    assert pack.passages[0].path == "Garden Notes/Compost"
    # The plan's step says what the expansion added and why (its hints).
    assert steps(pack)["eagle_text:expand"] == ("ok", "1 BM25 terms added; why: garden, soil")


async def test_per_plan_rerank_reorders_that_plan(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    before = await search(
        app, "panels brackets", kb_names=("alpha",), top_k=3, expand_parents=False
    )
    subscribe(hooks.rerank, lambda hits: tuple(reversed(hits)))
    after = await search(
        app, "panels brackets", kb_names=("alpha",), top_k=50, expand_parents=False
    )
    assert after.passages[-1].chunk_id == before.passages[0].chunk_id
    assert steps(after)["eagle_text:rerank"][0] == "ok"


def supplement_hit(corpus: Corpus) -> RetrievedHit:
    return RetrievedHit(
        chunk_id="probe-1",
        collection="probe_lookup",
        document_id=corpus.garden,
        kb_name="beta",
        text="entity card: compost",
        path="Garden Notes/Compost",
        score=1.0,
        source_chunk_id="probe-1",
    )


async def test_supplement_and_post_merge(app: EagleApp, corpus: Corpus, subscribe: Any) -> None:
    extra = supplement_hit(corpus)
    subscribe(hooks.retrieve_supplement, lambda hits_by_plan: (extra,))
    pack = await search(app, "panels", kb_names=("alpha", "beta"), top_k=20)
    assert "probe-1" in [p.chunk_id for p in pack.passages]
    assert pack.passages[0].chunk_id != "probe-1"

    def promote(merged: tuple[RetrievedHit, ...], supplements: tuple[RetrievedHit, ...]) -> Any:
        ids = {s.chunk_id for s in supplements}
        return tuple(h for h in merged if h.chunk_id in ids) + tuple(
            h for h in merged if h.chunk_id not in ids
        )

    subscribe(hooks.rrf_post_merge, promote)
    promoted = await search(app, "panels", kb_names=("alpha", "beta"), top_k=20)
    assert promoted.passages[0].chunk_id == "probe-1"
    assert promoted.passages[0].filename == "garden.md"


async def test_rerank_merged_beats_the_configured_reranker(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    subscribe(hooks.rerank_merged, lambda merged: tuple(sorted(merged, key=lambda h: h.path)))
    pack = await search(app, "panels brackets inverter", kb_names=("alpha",), expand_parents=False)
    ordered = [p.path for p in pack.passages]
    assert ordered == sorted(ordered)
    assert steps(pack)["rerank"][1] == "reranked by a plugin (RERANK_MERGED)"


async def test_configured_http_reranker_orders_by_its_scores(app: EagleApp, corpus: Corpus) -> None:
    query = "clean panels twice a year"
    with serve(rerank_server) as (url, recorded):
        app.retrieval.reranker = HttpReranker(url=url + "/rerank", style="tei")
        try:
            pack = await search(app, query, kb_names=("alpha",), expand_parents=False)
            unranked = await search(app, query, kb_names=("alpha",), rerank=False)
        finally:
            app.retrieval.reranker = None
    scores = [p.scores["rerank"] for p in pack.passages]
    assert scores == sorted(scores, reverse=True)
    assert pack.passages[0].path == "Solar Guide/Maintenance"
    assert len(recorded.requests) == 1  # rerank=False made no call
    assert all("rerank" not in p.scores for p in unranked.passages)


async def test_a_failing_reranker_keeps_fused_order_with_a_warning(
    app: EagleApp, corpus: Corpus
) -> None:
    baseline = await search(app, "panels", kb_names=("alpha",))
    with serve(lambda *_: json_answer(500, {"error": "down"})) as (url, _):
        app.retrieval.reranker = HttpReranker(url=url, max_retries=0)
        try:
            pack = await search(app, "panels", kb_names=("alpha",))
        finally:
            app.retrieval.reranker = None
    assert [p.chunk_id for p in pack.passages] == [p.chunk_id for p in baseline.passages]
    status, detail = steps(pack)["rerank"]
    assert status == "warning" and "fused order kept" in detail


async def test_a_failing_plan_is_skipped_and_audited(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    def with_broken_plan(query: QueryRequest) -> QueryRouteDecision:
        plans = (
            CollectionQueryPlan("eagle_text", app.text_encoder.name, 5),
            CollectionQueryPlan("no_such_collection", app.text_encoder.name, 5),
        )
        return QueryRouteDecision(plans, classifier=PLUGIN)

    subscribe(hooks.classify_query, with_broken_plan)
    pack = await search(app, "inverter", kb_names=("alpha",))
    assert pack.passages[0].path == "Solar Guide/Installation/Wiring"
    assert steps(pack)["no_such_collection:plan"][0] == "error"
    audited = [d for d in app.audit.recent(20) if d.decision == "plan_failed"]
    assert audited and audited[0].details["collection"] == "no_such_collection"


async def test_a_failing_embedder_leaves_bm25(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    def broken(request: EmbedRequest) -> None:
        if request.purpose == "query":
            raise RuntimeError("embedding service down")

    subscribe(hooks.embed_text, broken)
    pack = await search(app, "inverter copper", kb_names=("alpha",))
    assert pack.passages[0].path == "Solar Guide/Installation/Wiring"
    status, detail = steps(pack)["eagle_text:dense"]
    assert status == "warning" and "embedding service down" in detail


async def test_a_failing_hook_subscriber_degrades(
    app: EagleApp, corpus: Corpus, subscribe: Any
) -> None:
    def broken(query: QueryRequest) -> None:
        raise RuntimeError("plugin bug")

    failing = (hooks.query_assemble, hooks.classify_query, hooks.rrf_post_merge)
    for hook in failing:
        subscribe(hook, broken)
    pack = await search(app, "inverter", kb_names=("alpha",))
    assert pack.passages[0].path == "Solar Guide/Installation/Wiring"
    audited = {d.details.get("hook") for d in app.audit.recent(10) if d.category == "hook_failure"}
    assert {h.name for h in failing} <= audited


async def test_visual_plan_and_visual_filter(app: EagleApp, corpus: Corpus, subscribe: Any) -> None:
    vector = np.zeros(app.settings.milvus.visual_dim, dtype=np.float32)
    vector[0] = 1.0
    app.vectors.upsert(
        VISUAL_COLLECTION,
        [
            {
                "id": "fig-1",
                "document_id": corpus.solar,
                "kb_name": "alpha",
                "image_id": "img-1",
                "page": 1,
                "position": "0,0,100,100",
                "chunk_type": "figure",
                "parent_section": "Solar Guide/Installation/Wiring",
                "content_summary": "diagram of the inverter wiring harness",
                "source_chunk_id": "",
                "dense": vector.tolist(),
            }
        ],
    )
    text_only = await search(app, "wiring harness diagram", kb_names=("alpha",))
    assert "fig-1" not in [p.chunk_id for p in text_only.passages]
    # hybrid adds the visual plan, which skips a scope whose catalog lists no visuals
    assert steps(text_only)["eagle_visual:plan"][0] == "skipped"
    pack = await search(app, "wiring harness diagram", kb_names=("alpha",), with_images=True)
    assert pack.route is not None
    assert [p.collection for p in pack.route.plans] == ["eagle_text", "eagle_visual"]
    figure = next(p for p in pack.passages if p.chunk_id == "fig-1")
    assert figure.type == "figure" and figure.page_nums == (1,)
    assert figure.metadata["image_id"] == "img-1"
    assert figure.metadata["source_chunk_id"] is None  # an anchor, not an identity
    # The summary encoder's queries are the text encoder's, so the visual plan searches densely.
    assert pack.route.plans[1].encoder == pack.route.plans[0].encoder
    assert steps(pack)["eagle_visual:dense"][0] == "ok"

    subscribe(hooks.retrieve_visual_filter, lambda: VisualFilter(chunk_types=("table",)))
    filtered = await search(app, "wiring harness diagram", kb_names=("alpha",), with_images=True)
    assert "fig-1" not in [p.chunk_id for p in filtered.passages]


async def test_scope_union_adds_a_specialized_collection(app: EagleApp, corpus: Corpus) -> None:
    spec = CollectionSpec("probe_text", "text", app.settings.milvus.text_dim)
    app.vectors.ensure_collections([spec])
    app.encoders.set_collection_dim("probe_text", spec.dim, query_encoder=app.text_encoder.name)
    text = "specialized note about tomato blight"
    vector = app.text_encoder.embed_passages([text])[0].tolist()
    row = {
        "id": "probe-chunk",
        "document_id": corpus.garden,
        "kb_name": "beta",
        "text": text,
        "path": "Garden Notes/Tomatoes",
        "level": 2,
        "type": "text",
        "chunk_index": 0,
        "page_nums": [],
        "dense": vector,
    }
    app.vectors.upsert("probe_text", [row])
    before = await search(app, "tomato blight", kb_names=("beta",))
    assert "probe-chunk" not in [p.chunk_id for p in before.passages]
    app.repositories.knowledge_bases.add_collections("beta", ["probe_text"])
    try:
        pack = await search(app, "tomato blight", kb_names=("beta",))
    finally:
        app.repositories.knowledge_bases.set_collections("beta", ["eagle_text"])
    assert pack.route is not None
    forced = [p for p in pack.route.plans if p.collection == "probe_text"]
    assert forced and forced[0].reason.startswith("scope:")
    probe = next(p for p in pack.passages if p.chunk_id == "probe-chunk")
    assert probe.collection == "probe_text" and probe.scores["probe_text_rank"] == 1
    other = await search(app, "tomato blight", kb_names=("alpha",))
    assert pack.route is not None and other.route is not None
    assert [p.collection for p in other.route.plans] == ["eagle_text"]
