"""RRF: invariants checked on arbitrary ranked lists, and the dedupe rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.errors import InvalidInputError
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.fusion import RankedList, rrf_fuse


def hit(chunk: str, *, collection: str = "eagle_text", source: str | None = None) -> RetrievedHit:
    return RetrievedHit(
        chunk_id=chunk,
        collection=collection,
        document_id="d",
        kb_name="kb",
        text=chunk,
        path=f"doc/{chunk}",
        score=0.0,
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
