"""The relevance score: in [0, 1], from the lists' rescaled scores or the reranker's."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.fusion import RankedList, normalized_fuse
from eagle_rag.retrieval.pack import ContextPack, Passage
from eagle_rag.retrieval.relevance import relevance
from eagle_rag.retrieval.wire import search_response, shown_relevance


def hit(chunk_id: str, score: float, stage: str) -> RetrievedHit:
    return RetrievedHit(
        chunk_id, "eagle_text", "d", "kb", chunk_id, "", score, {stage: score}, chunk_id
    )


def test_normalized_fusion_sets_an_absolute_mean() -> None:
    dense = RankedList(
        "dense", [hit("a", 0.9, "dense"), hit("b", 0.8, "dense"), hit("c", 0.5, "dense")]
    )
    sparse = RankedList("sparse", [hit("a", 8.0, "sparse"), hit("c", 2.0, "sparse")], zero=0.0)
    fused = {h.chunk_id: h.scores["relevance"] for h in normalized_fuse([dense, sparse])}
    # Cosine from the head's last score (0.5) to a perfect match: a 0.8, b 0.6, c 0.
    # BM25 as a share of the best: a 1, c 0.25; b missed, at the list's last share 0.25.
    assert fused["a"] == pytest.approx((0.8 + 1.0) / 2)
    assert fused["b"] == pytest.approx((0.6 + 0.25) / 2)
    assert fused["c"] == pytest.approx((0.0 + 0.25) / 2)
    headed = normalized_fuse([dense, sparse], head=3)  # BM25 ran out before its head: zero
    assert {h.chunk_id: h.scores["relevance"] for h in headed}["b"] == pytest.approx(0.6 / 2)


def test_a_query_that_finds_nothing_good_stays_low() -> None:
    """The fusion scale puts every list's best at 1; relevance does not."""
    flat = [hit(f"d{i}", 0.80 - i * 0.001, "dense") for i in range(20)]
    only_dense = normalized_fuse([RankedList("dense", flat)], head=20)
    assert only_dense[0].scores["fused"] == pytest.approx(1.0)
    assert only_dense[0].scores["relevance"] < 0.1
    sharp = [hit("best", 0.95, "dense"), *flat]
    assert normalized_fuse([RankedList("dense", sharp)], head=20)[0].scores["relevance"] > 0.7


@given(
    st.lists(st.floats(-1, 1), min_size=1, max_size=20),
    st.lists(st.floats(0, 50), min_size=1, max_size=20),
)
def test_relevance_is_always_within_0_and_1(dense: list[float], sparse: list[float]) -> None:
    lists = [
        RankedList("dense", [hit(f"d{i}", s, "dense") for i, s in enumerate(sorted(dense)[::-1])]),
        RankedList(
            "sparse",
            [hit(f"s{i}", s, "sparse") for i, s in enumerate(sorted(sparse)[::-1])],
            zero=0.0,
        ),
    ]
    for fused in normalized_fuse(lists, head=5):
        assert 0.0 <= relevance(fused.scores) <= 1.0


def test_rules_in_order() -> None:
    assert relevance({"rerank": 0.83, "relevance": 0.2}) == 0.83
    assert relevance({"rerank": 4.0}) == pytest.approx(0.982, abs=1e-3)  # a logit, squashed
    assert relevance({"relevance": 0.4, "dense": 0.9}) == 0.4
    assert relevance({"dify": 0.71, "rrf": 0.016}, {"engine": "dify"}) == 0.71
    assert relevance({"dense": 1.2, "rrf": 0.016}) == 1.0  # RRF plan fusion: the cosine
    assert relevance({"rrf": 0.016}) == 0.0


def passage(n: int, score: float, *, image: bool = False) -> Passage:
    collection = "eagle_visual" if image else "eagle_text"
    return Passage(
        n, f"c{n}", "t", "", (), "d", "f", "kb", collection, "text", 0.0, {"relevance": score}
    )


def test_shown_scores_never_rise_down_a_list_and_a_threshold_keeps_a_prefix() -> None:
    """Fusion orders, relevance scores: they can disagree. The best hit must never be dropped
    by a threshold that keeps the hits ranked below it."""
    ranked = [
        passage(1, 0.645),
        passage(2, 0.9, image=True),
        passage(3, 0.664),
        passage(4, 0.5, image=True),
        passage(5, 0.2),
        passage(6, 0.674),
    ]
    assert shown_relevance(ranked) == [0.645, 0.9, 0.645, 0.5, 0.2, 0.2]  # images apart
    pack = ContextPack("q", tuple(ranked), None, ())
    kept = search_response(pack, score_threshold=0.6)["sources"]
    assert [s["chunk_id"] for s in kept["text"]] == ["c1", "c3"]
    assert [s["score"] for s in kept["text"]] == [0.645, 0.645]
    assert [s["chunk_id"] for s in kept["image"]] == ["c2"]
    assert [s["scores"]["relevance"] for s in kept["text"]] == [0.645, 0.664]  # raw kept


def bridged(n: int, score: float, engine: str = "dify") -> Passage:
    return Passage(
        n,
        f"b{n}",
        "t",
        "",
        (),
        "d",
        "f",
        "kb",
        engine,
        "text",
        0.0,
        {engine: score},
        metadata={"engine": engine},
    )


def test_a_bridged_engines_scores_are_capped_only_by_its_own() -> None:
    """Fusion interleaves a native KB's list and a Dify KB's by rank: the Dify hit of 0.91
    ranked after a weak native hit was shown 0.05, and a threshold of 0.3 dropped every hit."""
    ranked = [passage(1, 0.05), bridged(2, 0.91), bridged(3, 0.88, "ragflow"), passage(4, 0.03)]
    ranked += [bridged(5, 0.42), bridged(6, 0.95)]
    assert shown_relevance(ranked) == [0.05, 0.91, 0.88, 0.03, 0.42, 0.42]
    pack = ContextPack("q", tuple(ranked), None, ())
    kept = search_response(pack, score_threshold=0.3)["sources"]["text"]
    assert [s["chunk_id"] for s in kept] == ["b2", "b3", "b5", "b6"]
    reranked = [
        replace(p, scores={**p.scores, "rerank": r})
        for p, r in zip(ranked[:2], [0.2, 0.7], strict=True)
    ]
    assert shown_relevance(reranked) == [0.2, 0.2]  # one scale once a reranker scored them all
