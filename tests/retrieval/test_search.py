"""The query path through the real app: scope, filters, modes, expansion, budget, Chinese."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.db.repositories.bundle import Repositories
from eagle_rag.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from eagle_rag.index.filters import eq
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.plugins.payloads import QueryRequest, RetrievedHit
from eagle_rag.retrieval.pack import ContextPack, Passage, trim_to_budget
from eagle_rag.retrieval.service import RetrievalService
from eagle_rag.retrieval.wire import search_response
from tests.retrieval.conftest import Corpus

pytestmark = pytest.mark.asyncio(loop_scope="module")


PASSAGE = Passage(
    1, "c1", "Mount the panels.", "Guide", (), "d1", "guide.md", "kb", "eagle_text", "text", 1.0
)


async def search(app: EagleApp, text: str, **options: Any) -> ContextPack:
    return await app.retrieval.search(QueryRequest(text, **options))


def paths(pack: ContextPack) -> list[str]:
    return [p.path for p in pack.passages]


async def test_hybrid_search_cites_the_section_that_answers(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "connect the inverter copper cables", kb_names=("alpha",), top_k=3)
    top = pack.passages[0]
    assert top.path == "Solar Guide/Installation/Wiring"
    assert top.citation == 1 and top.filename == "solar.md" and top.kb_name == "alpha"
    assert top.document_id == corpus.solar and top.type == "text"
    assert {"dense", "sparse", "plan_fused", "rrf"} <= set(top.scores)
    assert [p.citation for p in pack.passages] == [1, 2, 3]
    assert pack.route is not None and [p.collection for p in pack.route.plans] == ["eagle_text"]
    names = [s.name for s in pack.steps]
    assert names[:2] == ["scope", "classify_query"]
    assert "eagle_text:dense" in names and "eagle_text:sparse" in names


async def test_the_plans_dense_and_bm25_lists_fuse_as_configured(
    app: EagleApp, corpus: Corpus
) -> None:
    request = QueryRequest(
        "connect the inverter copper cables", kb_names=("alpha",), top_k=3, expand_parents=False
    )
    normalized = (await app.retrieval.search(request)).passages[0].scores
    retrieval = app.settings.retrieval.model_copy(update={"hybrid_fusion": "rrf"})
    rrf_app = replace(app, settings=app.settings.model_copy(update={"retrieval": retrieval}))
    by_rank = (await RetrievalService(rrf_app, app.knowledge).search(request)).passages[0].scores

    def rrf(scores: Mapping[str, float]) -> float:
        return sum(1 / (60 + scores[f"{name}_rank"]) for name in ("dense", "sparse"))

    assert by_rank["plan_fused"] == pytest.approx(rrf(by_rank))
    # BM25 is rescaled from its true zero: each hit's share of the best BM25 score.
    words = replace(request, text="panels brackets inverter", top_k=5, mode="sparse")
    bm25 = (await app.retrieval.search(words)).passages
    assert len(bm25) >= 2
    for passage in bm25:
        share = passage.scores["sparse"] / bm25[0].scores["sparse"]
        assert passage.scores["plan_fused"] == pytest.approx(share)
    # Rescaled scores: a list's best hit scores 1, so the top hit of two lists scores up to 2.
    assert 1.0 <= normalized["plan_fused"] <= 2.0
    assert normalized["plan_fused"] != pytest.approx(rrf(normalized))


async def test_pdf_hits_carry_their_page_numbers(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "scope of the audit", kb_names=("alpha",), top_k=1)
    top = pack.passages[0]
    assert top.document_id == corpus.report and top.page_nums == (2,)
    assert top.path.endswith("Chapter 1 Overview/1.1 Scope")


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
async def test_every_mode_finds_the_answer(app: EagleApp, corpus: Corpus, mode: str) -> None:
    pack = await search(app, "tomatoes sun watering", kb_names=("beta",), mode=mode, top_k=2)
    assert pack.passages[0].path == "Garden Notes/Tomatoes"
    stages = set(pack.passages[0].scores)
    assert ("dense" in stages) == (mode != "sparse")
    assert ("sparse" in stages) == (mode != "dense")


async def test_chinese_query_over_chinese_document(app: EagleApp, corpus: Corpus) -> None:
    for mode in ("sparse", "hybrid"):
        pack = await search(app, "逆变器怎么连接", kb_names=("zh",), mode=mode, top_k=1)
        assert pack.passages[0].path == "太阳能指南/安装", mode
        assert "逆变器" in pack.passages[0].text


# --- scope --------------------------------------------------------------------------------------


async def test_several_kbs_at_once(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "panels compost", kb_names=("alpha", "beta"), top_k=20)
    assert {p.kb_name for p in pack.passages} == {"alpha", "beta"}
    only_beta = await search(app, "panels compost", kb_names=("beta",), top_k=20)
    assert {p.kb_name for p in only_beta.passages} == {"beta"}


async def test_no_kb_means_every_kb_of_the_namespace(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "panels compost 逆变器", top_k=50)
    assert {"alpha", "beta", "zh"} <= set(pack.kb_names)
    assert {"alpha", "beta", "zh"} <= {p.kb_name for p in pack.passages}


async def test_document_ids_narrow_the_scope(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "revenue panels", document_ids=(corpus.report,), top_k=10)
    assert {p.document_id for p in pack.passages} == {corpus.report}
    assert pack.kb_names == ("alpha",)


async def test_tags_narrow_the_scope(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "panels revenue tomatoes", tags=("energy",), top_k=20)
    assert {p.document_id for p in pack.passages} == {corpus.solar}
    none = await search(app, "panels", tags=("no-such-tag",))
    assert none.passages == () and none.steps[-1].status == "skipped"


async def test_unknown_kb_and_foreign_document_look_missing(app: EagleApp, corpus: Corpus) -> None:
    with pytest.raises(NotFoundError):
        await search(app, "panels", kb_names=("nope",))
    other = Repositories.for_namespace(app.database, "other")
    other.knowledge_bases.create("alpha")
    foreign, _ = other.documents.create(
        kb_name="alpha", filename="x.md", mime_type="text/markdown", sha256="0" * 64, size=1
    )
    with pytest.raises(NotFoundError):
        await search(app, "panels", document_ids=(foreign.id,))


async def test_a_document_outside_the_requested_kbs_is_refused(
    app: EagleApp, corpus: Corpus
) -> None:
    with pytest.raises(InvalidInputError, match="outside the requested knowledge bases"):
        await search(app, "panels", kb_names=("beta",), document_ids=(corpus.solar,))


async def test_allowed_kbs_narrow_and_guard_the_scope(app: EagleApp, corpus: Corpus) -> None:
    pack = await app.retrieval.search(
        QueryRequest("panels tomatoes", top_k=20), allowed_kbs={"beta"}
    )
    assert {p.kb_name for p in pack.passages} == {"beta"}
    with pytest.raises(PermissionDeniedError, match="outside this key's scope"):
        await app.retrieval.search(QueryRequest("x", kb_names=("alpha",)), allowed_kbs={"beta"})


# --- metadata filters ---------------------------------------------------------------------------


async def test_filter_by_source_type(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "revenue panels", filters={"source_type": "pdf"}, top_k=20)
    assert pack.passages and {p.document_id for p in pack.passages} == {corpus.report}
    assert all(p.metadata["fields"]["source_type"] == "pdf" for p in pack.passages)


async def test_filter_by_year_value_and_range(app: EagleApp, corpus: Corpus) -> None:
    exact = await search(app, "panels revenue", filters={"year": 2021}, top_k=20)
    assert {p.document_id for p in exact.passages} == {corpus.solar}
    ranged = await search(app, "panels revenue", filters={"year": {"gte": 2022}}, top_k=20)
    assert {p.document_id for p in ranged.passages} == {corpus.report}


async def test_filter_by_page_range(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "demand revenue scope", filters={"pages": [3, 3]}, top_k=20)
    assert pack.passages and all(3 in p.page_nums for p in pack.passages)
    assert any("Outlook" in p.path for p in pack.passages)


async def test_filter_by_custom_metadata_and_chunk_type(app: EagleApp, corpus: Corpus) -> None:
    pack = await search(app, "panels tomatoes", filters={"metadata": {"team": "home"}}, top_k=20)
    assert {p.document_id for p in pack.passages} == {corpus.garden}
    summaries = await search(
        app,
        "guide",
        kb_names=("alpha",),
        filters={"type": "section_summary"},
        expand_parents=False,
        top_k=20,
    )
    assert summaries.passages and {p.type for p in summaries.passages} == {"section_summary"}


@pytest.mark.parametrize(
    "value", ['" or 1==1 or "', 'ops" or kb_name != "', "\\", "ops\n", "x' OR '1'='1"]
)
async def test_hostile_filter_values_match_nothing_and_raise_nothing(
    app: EagleApp, corpus: Corpus, value: str
) -> None:
    pack = await search(app, "panels", filters={"metadata": {"team": value}}, top_k=20)
    assert pack.passages == ()


# --- parent expansion, budget, validation ------------------------------------------------------


async def test_a_section_summary_hit_drills_down_to_its_chunks(
    app: EagleApp, corpus: Corpus
) -> None:
    request: dict[str, Any] = {"kb_names": ("alpha",), "mode": "sparse", "top_k": 2}
    raw = await search(app, "Installation", expand_parents=False, **request)
    assert raw.passages[0].type == "section_summary"
    assert raw.passages[0].path == "Solar Guide/Installation"
    expanded = await search(app, "Installation", **request)
    # Both chunks match the heading they sit under (their BM25 text has it): in their rank order.
    assert sorted(p.path for p in expanded.passages) == [
        "Solar Guide/Installation/Roof mounting",
        "Solar Guide/Installation/Wiring",
    ]
    assert all(p.metadata["expanded_from"] == raw.passages[0].chunk_id for p in expanded.passages)
    assert any(s.name == "expand_parents" for s in expanded.steps)


async def test_a_chunk_matches_the_headings_it_sits_under(app: EagleApp, corpus: Corpus) -> None:
    """A passage rarely repeats its heading: "Wiring" matched only the Installation summary
    that lists it, never the chunk under "### Wiring"."""
    pack = await search(
        app, "wiring", kb_names=("alpha",), mode="sparse", top_k=5, expand_parents=False
    )
    chunks = [p.path for p in pack.passages if p.type == "text"]
    assert chunks[:1] == ["Solar Guide/Installation/Wiring"]


async def test_expansion_does_not_repeat_evidence_already_ranked(
    app: EagleApp, corpus: Corpus
) -> None:
    pack = await search(app, "inverter installation wiring", kb_names=("alpha",), top_k=6)
    ids = [p.chunk_id for p in pack.passages]
    assert len(ids) == len(set(ids))
    assert "section_summary" not in {p.type for p in pack.passages if "expanded_from" in p.metadata}


async def test_token_budget_keeps_the_best_prefix(app: EagleApp, corpus: Corpus) -> None:
    full = await search(app, "panels brackets inverter", kb_names=("alpha",), top_k=5)
    count = app.text_encoder.count_tokens
    first = count(full.passages[0].text)
    trimmed = await search(
        app, "panels brackets inverter", kb_names=("alpha",), top_k=5, token_budget=first + 1
    )
    assert trimmed.truncated and trimmed.token_count is not None
    assert trimmed.token_count <= first + 1
    assert [p.chunk_id for p in trimmed.passages] == [full.passages[0].chunk_id]
    tiny = await search(app, "panels brackets inverter", kb_names=("alpha",), token_budget=3)
    assert len(tiny.passages) == 1 and count(tiny.passages[0].text) <= 3
    assert not trimmed.passages[0].truncated  # kept whole
    shown = search_response(tiny)["sources"]["text"]
    assert shown[0]["truncated"] and shown[0]["content"] == tiny.passages[0].text
    assert tiny.token_count == count(shown[0]["content"]) <= 3


async def test_a_budget_too_small_for_any_text_leaves_no_passage() -> None:
    """A tokenizer that counts its special tokens even for no text (e5: 2) cut the first passage
    to "" and kept it, over budget; a passage cut to fit said ``truncated: false``."""

    def count(text: str) -> int:
        return len(text.split()) + 2

    first = replace(PASSAGE, text="Clean the panels twice a year with water.")
    assert trim_to_budget([first, PASSAGE], 1, count) == ((), 0, True)
    passages, used, cut = trim_to_budget([first, PASSAGE], 4, count)
    assert [p.text for p in passages] == ["Clean the"] and used == 4 and cut
    assert passages[0].truncated
    whole, used, cut = trim_to_budget([first], 10, count)
    assert whole == (first,) and used == 10 and not cut and not first.truncated


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"text": "  "}, "query"),  # the field every surface sends
        ({"text": "x" * 5000}, "query"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 10_000}, "top_k"),
        ({"mode": "fuzzy"}, "mode"),
        ({"token_budget": 0}, "token_budget"),
        ({"filters": {"colour": "red"}}, None),
    ],
)
async def test_bad_requests_name_the_field(
    app: EagleApp, corpus: Corpus, options: dict[str, Any], field: str | None
) -> None:
    options = dict(options)
    text = options.pop("text", "panels")
    with pytest.raises(InvalidInputError) as caught:
        await search(app, text, **options)
    if field:
        assert caught.value.fields["field"] == field


async def test_a_deleted_document_is_never_returned(app: EagleApp, corpus: Corpus) -> None:
    app.repositories.knowledge_bases.create("gone")
    submission = app.ingest.submit_file(
        kb_name="gone", filename="g.md", stream=io.BytesIO(b"# Kiwi\n\nKiwi fruit orchard notes.")
    )
    await app.queue.join()
    assert (await search(app, "kiwi orchard", kb_names=("gone",))).passages
    remove_document(app, submission.document_id)
    assert (await search(app, "kiwi orchard", kb_names=("gone",))).passages == ()
    everywhere = await search(app, "kiwi orchard", top_k=50)
    assert submission.document_id not in {p.document_id for p in everywhere.passages}


async def test_only_summaries_within_the_search_depth_look_up_their_chunks(
    app: EagleApp, corpus: Corpus
) -> None:
    from eagle_rag.retrieval.expansion import ParentExpander

    pack = await search(
        app, "Installation", kb_names=("alpha",), mode="sparse", top_k=1, expand_parents=False
    )
    summary_pack = pack.passages[0]
    assert summary_pack.type == "section_summary"
    hit = RetrievedHit(
        chunk_id=summary_pack.chunk_id,
        collection=summary_pack.collection,
        document_id=summary_pack.document_id,
        kb_name=summary_pack.kb_name,
        text=summary_pack.text,
        path=summary_pack.path,
        score=1.0,
        source_chunk_id=summary_pack.chunk_id,
        metadata={"type": "section_summary"},
    )
    options: dict[str, Any] = {
        "limit": 3,
        "queries": {},
        "vectors": {},
        "scope": eq("kb_name", "alpha"),
    }
    shallow = ParentExpander(app.vectors, children=2, search_depth=0)
    kept, expanded = await shallow.expand([hit], [], **options)
    assert expanded == 0 and [h.chunk_id for h in kept] == [hit.chunk_id]  # no look-up allowed
    deep = ParentExpander(app.vectors, children=2, search_depth=10)
    drilled, expanded = await deep.expand([hit], [], **options)
    assert expanded == 1
    assert [h.path for h in drilled] == [
        "Solar Guide/Installation/Roof mounting",
        "Solar Guide/Installation/Wiring",
    ]
