"""Pages as whole texts: rebuilt from stored chunks, ranked by BM25, voting in page search."""

from __future__ import annotations

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.retrieval.pack import Passage
from eagle_rag.retrieval.page_units import page_texts, rank_page_texts
from eagle_rag.retrieval.pages import PAGE_TEXT_WEIGHT, best_pages, rank_pages
from tests.retrieval.conftest import Corpus


def test_page_texts_follow_reading_order_and_count_a_crossing_chunk_on_both_pages() -> None:
    rows = [
        {"text": "second on one", "page_nums": [1], "chunk_index": 1},
        {"text": "crosses", "page_nums": [1, 2], "chunk_index": 2},
        {"text": "first on one", "page_nums": [1], "chunk_index": 0},
        {"text": "only on three", "page_nums": [3, 3], "chunk_index": 3},
        {"text": "no page", "page_nums": [], "chunk_index": 4},
    ]
    assert page_texts(rows) == {
        1: "first on one\nsecond on one\ncrosses",
        2: "crosses",
        3: "only on three",
    }


def test_a_page_holding_every_word_of_the_question_ranks_first() -> None:
    pages = {
        1: "Revenue grew. Revenue grew again. Revenue, revenue and revenue.",
        2: "Segment table. Revenue by region: Europe 12, Asia 9. Operating margin by region.",
        3: "The board met twice.",
    }
    ranked = rank_page_texts(pages, "operating margin and revenue by region", limit=5)
    assert ranked[0] == 2
    assert 3 not in ranked  # shares no word with the question
    assert rank_page_texts(pages, "operating margin by region", limit=1) == [2]


def test_questions_without_words_or_pages_rank_nothing() -> None:
    assert rank_page_texts({1: "text"}, "", limit=3) == []
    assert rank_page_texts({}, "revenue", limit=3) == []
    assert rank_page_texts({1: "revenue"}, "unrelated words", limit=3) == []
    with pytest.raises(ValueError, match="limit"):
        rank_page_texts({1: "revenue"}, "revenue", limit=0)


def test_page_text_votes_join_the_passages_votes() -> None:
    passage = Passage(
        citation=1,
        chunk_id="c1",
        document_id="d",
        kb_name="k",
        filename="f.pdf",
        path="d",
        text="revenue",
        score=1.0,
        scores={},
        collection="eagle_text",
        type="text",
        page_nums=(4,),
    )
    alone = rank_pages([passage], limit=3)
    assert [p.page for p in alone] == [4]
    joined = rank_pages([passage], limit=3, page_texts=[7, 4])
    assert [p.page for p in joined] == [4, 7]
    assert joined[0].score == pytest.approx(alone[0].score + PAGE_TEXT_WEIGHT / 2)
    assert joined[1].score == pytest.approx(PAGE_TEXT_WEIGHT) and joined[1].passages == []


@pytest.mark.asyncio(loop_scope="module")
async def test_the_app_rebuilds_a_pdfs_pages_from_its_stored_chunks(
    app: EagleApp, corpus: Corpus
) -> None:
    texts = await app.retrieval.page_texts(document_id=corpus.report, kb_name="alpha")
    assert sorted(texts) == [1, 2, 3]
    assert "Revenue grew in 2023" in texts[1]
    assert "scope of the audit" in texts[2] and "Revenue" not in texts[2]
    assert "steady demand" in texts[3]
    # Another KB's name finds nothing: the document's rows are scoped by their KB too.
    assert await app.retrieval.page_texts(document_id=corpus.report, kb_name="beta") == {}


@pytest.mark.asyncio(loop_scope="module")
async def test_page_search_ranks_the_pages_by_their_own_text_too(
    app: EagleApp, corpus: Corpus
) -> None:
    ranked, _ = await best_pages(
        app.retrieval,
        query="scope of the audit",
        document_id=corpus.report,
        kb_name="alpha",
        pages=3,
    )
    assert ranked[0].page == 2
    dense, _ = await best_pages(
        app.retrieval,
        query="scope of the audit",
        document_id=corpus.report,
        kb_name="alpha",
        pages=3,
        mode="dense",
    )
    # Pages as texts vote by BM25 only: a dense search ranks by its passages alone, so the
    # same page scores less there.
    page_two = {p.page: p.score for p in dense}.get(2, 0.0)
    assert ranked[0].score > page_two
