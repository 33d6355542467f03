"""Fusion: RRF and normalized-score invariants on arbitrary ranked lists, and the dedupe rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.errors import InvalidInputError
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.fusion import RankedList, normalized_fuse, rrf_fuse


def hit(
    chunk: str,
    *,
    collection: str = "eagle_text",
    source: str | None = None,
    score: float = 0.0,
) -> RetrievedHit:
    return RetrievedHit(
        chunk_id=chunk,
        collection=collection,
        document_id="d",
        kb_name="kb",
        text=chunk,
        path=f"doc/{chunk}",
        score=score,
        source_chunk_id=source if source is not None else chunk,
    )


ids = st.lists(st.sampled_from([f"c{i}" for i in range(12)]), max_size=10, unique=True)
lists_of_ids = st.lists(ids, min_size=1, max_size=4)


def ranked(lists: list[list[str]]) -> list[RankedList]:
    return [RankedList(f"l{i}", [hit(c) for c in ids]) for i, ids in enumerate(lists)]


@given(lists_of_ids, st.integers(min_value=1, max_value=200))
def test_scores_are_the_rrf_formula_and_sorted(lists: list[list[str]], k: int) -> None:
    fused = rrf_fuse(ranked(lists), k=k)
    expected = {
        c: sum(1 / (k + ids.index(c) + 1) for ids in lists if c in ids)
        for c in {c for ids in lists for c in ids}
    }
    assert {h.chunk_id: h.score for h in fused} == pytest.approx(expected)
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)
    assert len({h.chunk_id for h in fused}) == len(fused)  # every item once


@given(lists_of_ids)
def test_result_does_not_depend_on_list_order(lists: list[list[str]]) -> None:
    forward = [h.chunk_id for h in rrf_fuse(ranked(lists))]
    backward = [h.chunk_id for h in rrf_fuse(ranked(lists[::-1]))]
    assert forward == backward


@given(ids)
def test_one_list_keeps_its_order(single: list[str]) -> None:
    assert [h.chunk_id for h in rrf_fuse(ranked([single]))] == single


@given(lists_of_ids, st.sampled_from([f"c{i}" for i in range(12)]))
def test_an_item_first_everywhere_is_first(lists: list[list[str]], top: str) -> None:
    lists = [[top, *(c for c in ids if c != top)] for ids in lists]
    assert rrf_fuse(ranked(lists))[0].chunk_id == top


@given(lists_of_ids, st.sampled_from([f"c{i}" for i in range(12)]))
def test_appearing_in_one_more_list_never_lowers_an_item(lists: list[list[str]], item: str) -> None:
    before = {h.chunk_id: h.score for h in rrf_fuse(ranked(lists))}
    after = {h.chunk_id: h.score for h in rrf_fuse(ranked([*lists, [item]]))}
    assert after[item] > before.get(item, 0.0)


def test_ranks_of_each_list_are_kept_beside_the_fused_score() -> None:
    dense = [hit("a"), hit("b")]
    sparse = [hit("b")]
    fused = rrf_fuse([RankedList("dense", dense), RankedList("sparse", sparse)], k=60)
    b = next(h for h in fused if h.chunk_id == "b")
    assert b.scores["dense_rank"] == 2 and b.scores["sparse_rank"] == 1
    assert b.scores["rrf"] == pytest.approx(1 / 62 + 1 / 61)
    assert [h.chunk_id for h in fused] == ["b", "a"]


def test_weights_scale_a_lists_vote() -> None:
    lists = [RankedList("x", [hit("a"), hit("b")]), RankedList("y", [hit("b"), hit("a")], 2.0)]
    assert [h.chunk_id for h in rrf_fuse(lists)] == ["b", "a"]


def test_same_source_chunk_in_two_collections_is_one_hit() -> None:
    text = hit("chunk-1")
    specialized = hit("chunk-1", collection="bio_text")
    visual = hit("fig-1", collection="eagle_visual", source="chunk-1")
    fused = rrf_fuse(
        [RankedList("t", [text]), RankedList("s", [specialized]), RankedList("v", [visual])]
    )
    assert len(fused) == 1
    assert fused[0].chunk_id == "chunk-1"  # best rank, then smallest id, represents the group
    assert fused[0].metadata["collections"] == ["bio_text", "eagle_text", "eagle_visual"]
    assert fused[0].score == pytest.approx(3 / 61)


def test_visuals_without_a_source_chunk_dedupe_by_document_path_and_image() -> None:
    def figure(chunk: str, image: str) -> RetrievedHit:
        return RetrievedHit(
            chunk, "eagle_visual", "d", "kb", "", "doc/2", 0.0, metadata={"image_id": image}
        )

    fused = rrf_fuse(
        [
            RankedList("a", [figure("v1", "img1"), figure("v2", "img2")]),
            RankedList("b", [figure("v3", "img1")]),
        ]
    )
    assert sorted(h.metadata["image_id"] for h in fused) == ["img1", "img2"]


def test_a_list_cannot_vote_twice_for_one_item() -> None:
    fused = rrf_fuse([RankedList("l", [hit("a"), hit("a"), hit("b")])], k=60)
    assert {h.chunk_id: h.scores["l_rank"] for h in fused} == {"a": 1, "b": 2}


@pytest.mark.parametrize(("lists", "k"), [([], 0), ([RankedList("x", [], -1.0)], 60)])
def test_bad_parameters_are_refused(lists: list[RankedList], k: int) -> None:
    with pytest.raises(InvalidInputError):
        rrf_fuse(lists, k=k)


@given(lists_of_ids, st.integers(min_value=1, max_value=6))
def test_the_head_does_not_depend_on_list_depth(lists: list[list[str]], head: int) -> None:
    """Asking for more results never reorders the first ones: only heads vote for the head."""
    deep = rrf_fuse(ranked(lists), head=head)
    shallow = rrf_fuse(ranked([ids[:head] for ids in lists]), head=head)
    assert [h.chunk_id for h in deep[: len(shallow)]] == [h.chunk_id for h in shallow]


@given(lists_of_ids, st.integers(min_value=1, max_value=6))
def test_the_head_rule_keeps_every_item_once(lists: list[list[str]], head: int) -> None:
    fused = [h.chunk_id for h in rrf_fuse(ranked(lists), head=head)]
    assert sorted(fused) == sorted({c for ids in lists for c in ids})


def test_head_items_are_scored_by_head_votes_and_keep_every_rank() -> None:
    strong = [hit("a"), hit("b")]
    weak = [hit(f"w{i}") for i in range(5)] + [hit("a")]
    fused = {h.chunk_id: h for h in rrf_fuse([RankedList("s", strong), RankedList("w", weak)])}
    headed = {
        h.chunk_id: h
        for h in rrf_fuse([RankedList("s", strong), RankedList("w", weak)], k=60, head=2)
    }
    # Without a head "a" gets both votes; with one, only its vote from the strong head counts,
    # while its rank in the weak list's tail is still reported.
    assert fused["a"].score == pytest.approx(1 / 61 + 1 / 66)
    assert headed["a"].score == pytest.approx(1 / 61)
    assert headed["a"].scores["w_rank"] == 6 and headed["a"].scores["s_rank"] == 1
    assert headed["w4"].score == pytest.approx(1 / 65)  # the tail is fused over full lists


def test_a_deep_weak_list_cannot_outvote_a_strong_head() -> None:
    strong = [hit("a"), hit("b")]
    weak = [hit(f"w{i}") for i in range(30)] + [hit("z")]
    # "z" sits at depth 31 of the weak list: it may follow, never lead.
    fused = rrf_fuse([RankedList("s", strong), RankedList("w", weak)], head=2)
    assert [h.chunk_id for h in fused[:4]] == ["a", "w0", "b", "w1"]
    with pytest.raises(InvalidInputError):
        rrf_fuse([RankedList("s", strong)], head=0)


# Normalized fusion: the same invariants on lists with (descending) scores.

scored_ids = st.lists(
    st.tuples(st.sampled_from([f"c{i}" for i in range(12)]), st.floats(0, 50)),
    max_size=10,
    unique_by=lambda pair: pair[0],
).map(lambda pairs: sorted(pairs, key=lambda pair: -pair[1]))
scored_lists = st.lists(st.tuples(scored_ids, st.sampled_from([None, 0.0])), min_size=1, max_size=3)


def scored(lists: list[tuple[list[tuple[str, float]], float | None]]) -> list[RankedList]:
    return [
        RankedList(f"l{i}", [hit(c, score=s) for c, s in pairs], zero=zero)
        for i, (pairs, zero) in enumerate(lists)
    ]


@given(scored_lists, st.one_of(st.none(), st.integers(min_value=1, max_value=6)))
def test_normalized_fusion_keeps_every_item_once_in_score_order(
    lists: list[tuple[list[tuple[str, float]], float | None]], head: int | None
) -> None:
    fused = normalized_fuse(scored(lists), head=head)
    assert sorted(h.chunk_id for h in fused) == sorted({c for pairs, _ in lists for c, _ in pairs})
    limit = head or len(fused)
    ranks = [[v for k, v in h.scores.items() if k.endswith("_rank")] for h in fused]
    leading = [h.score for h, r in zip(fused, ranks, strict=True) if min(r) <= limit]
    following = [h.score for h, r in zip(fused, ranks, strict=True) if min(r) > limit]
    assert [h.score for h in fused] == leading + following  # the heads' items come first
    assert leading == sorted(leading, reverse=True)
    assert following == sorted(following, reverse=True)


@given(scored_lists)
def test_normalized_fusion_does_not_depend_on_list_order(
    lists: list[tuple[list[tuple[str, float]], float | None]],
) -> None:
    forward = [h.chunk_id for h in normalized_fuse(scored(lists), head=3)]
    backward = [h.chunk_id for h in normalized_fuse(scored(lists[::-1]), head=3)]
    assert forward == backward


@given(scored_lists, st.integers(min_value=1, max_value=6))
def test_normalized_head_does_not_depend_on_list_depth(
    lists: list[tuple[list[tuple[str, float]], float | None]], head: int
) -> None:
    deep = normalized_fuse(scored(lists), head=head)
    shallow = normalized_fuse(scored([(pairs[:head], zero) for pairs, zero in lists]), head=head)
    assert [h.chunk_id for h in deep[: len(shallow)]] == [h.chunk_id for h in shallow]


def test_normalized_scores_are_rescaled_and_missing_items_take_the_lists_floor() -> None:
    dense = [hit("a", score=0.75), hit("b", score=0.5), hit("c", score=0.25)]
    bm25 = [hit("c", score=10.0), hit("d", score=5.0)]
    fused = normalized_fuse([RankedList("dense", dense), RankedList("sparse", bm25, zero=0.0)])
    # dense is min-max over its list: a 1, b 0.5, c 0; BM25 is a ratio to its best: c 1, d 0.5.
    # a is missing from BM25 and takes its last score (0.5); d takes dense's last (0).
    assert [h.chunk_id for h in fused] == ["a", "c", "b", "d"]  # c ties b on a better rank
    assert [h.score for h in fused] == pytest.approx([1.5, 1.0, 1.0, 0.5])
    assert fused[1].scores["sparse_rank"] == 1 and fused[1].scores["dense_rank"] == 3


def test_a_flat_bm25_head_does_not_outvote_a_dense_hit_that_stands_out() -> None:
    dense = [hit("a", score=0.95), hit("b", score=0.80), hit("c", score=0.79)]
    flat_bm25 = [hit("b", score=10.0), hit("c", score=9.9), hit("a", score=9.8)]
    lists = [RankedList("dense", dense), RankedList("sparse", flat_bm25, zero=0.0)]
    assert rrf_fuse(lists)[0].chunk_id == "b"  # ranks alone cannot tell flat from decisive
    assert normalized_fuse(lists)[0].chunk_id == "a"


def test_a_decisive_bm25_hit_beats_a_flat_dense_head() -> None:
    flat_dense = [hit("a", score=0.801), hit("b", score=0.800), hit("c", score=0.799)]
    bm25 = [hit("b", score=20.0), hit("c", score=5.0), hit("a", score=4.0)]
    lists = [RankedList("dense", flat_dense), RankedList("sparse", bm25, zero=0.0)]
    assert normalized_fuse(lists)[0].chunk_id == "b"


def test_a_list_that_ran_out_imputes_its_zero_and_a_full_head_its_last_score() -> None:
    dense = [hit("a", score=0.9), hit("b", score=0.5)]
    bm25 = [hit("c", score=3.0)]  # nothing else shares a word with the query
    lists = [RankedList("dense", dense), RankedList("sparse", bm25, zero=0.0)]
    ran_out = {h.chunk_id: h.score for h in normalized_fuse(lists, head=5)}
    assert ran_out["a"] == pytest.approx(1.0)  # 1 from dense + BM25's zero
    full_head = {h.chunk_id: h.score for h in normalized_fuse(lists, head=1)}
    assert full_head["a"] == pytest.approx(2.0)  # 1 + BM25's last head score (its only one)


def test_equal_scores_all_scale_to_one_and_weights_scale_a_list() -> None:
    same = [hit("a", score=0.5), hit("b", score=0.5)]
    other = [hit("b", score=0.9), hit("a", score=0.1)]
    fused = normalized_fuse([RankedList("x", same, weight=3.0), RankedList("y", other)])
    assert {h.chunk_id: h.score for h in fused} == {
        "b": pytest.approx(3.0 + 1.0),
        "a": pytest.approx(3.0 + 0.0),
    }


@pytest.mark.parametrize(("lists", "head"), [([RankedList("x", [], weight=-1.0)], None), ([], 0)])
def test_normalized_fusion_refuses_bad_parameters(
    lists: list[RankedList], head: int | None
) -> None:
    with pytest.raises(InvalidInputError):
        normalized_fuse(lists, head=head)
