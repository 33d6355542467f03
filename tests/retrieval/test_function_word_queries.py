"""A query of function words only ("what is it?", "the of and"): BM25 keeps those words so that
it still orders something, but a passage sharing "is" with the question is no evidence. Its best
hit used to score a BM25 relevance of 1 (so 0.5 in a hybrid search), and the extractive answer
quoted the first sentence with "is" in it as the answer."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp
from eagle_rag.generation.extractive import compose
from eagle_rag.generation.prompt import Reference
from eagle_rag.index.sparse import content_tokens, tokenize
from eagle_rag.plugins.payloads import QueryRequest, RetrievedHit
from eagle_rag.retrieval.fusion import RankedList, normalized_fuse, plan_relevance
from eagle_rag.retrieval.wire import search_response
from tests.embedded import app_with_documents

NO_DIRECT_ANSWER = "The documents do not answer this directly."
DOCUMENTS = {
    "solar.md": "# Solar\n\nThe inverter is connected to the panel string with copper cable.",
    "bread.md": "# Bread\n\nMix flour, salt and yeast with water and leave it to rise an hour.",
    "leave.md": "# Leave\n\nEmployees get 25 days of paid leave a year; it is not paid out.",
}


def hit(chunk_id: str, score: float, stage: str) -> RetrievedHit:
    return RetrievedHit(
        chunk_id, "eagle_text", "d", "kb", chunk_id, "", score, {stage: score}, chunk_id
    )


def test_content_tokens_leave_function_words_out_even_when_nothing_else_is_left() -> None:
    assert content_tokens("What is it?") == []
    assert content_tokens("这个是什么？") == []
    assert content_tokens("逆变器是什么") == ["逆变", "逆变器"]
    assert content_tokens("How is the inverter wired?") == ["invert", "wire"]  # stems
    # The BM25 query itself still falls back to them: "to be or not to be" must match something.
    assert tokenize("to be or not to be", query=True) == ["to", "be", "or", "not", "to", "be"]


def test_a_list_that_cannot_tell_is_left_out_of_relevance_not_of_the_order() -> None:
    dense = RankedList("dense", [hit("a", 0.9, "dense"), hit("b", 0.7, "dense")])
    sparse = [hit("b", 3.0, "sparse"), hit("a", 1.0, "sparse")]
    telling = RankedList("sparse", sparse, zero=0.0)
    mute = RankedList("sparse", sparse, zero=0.0, tells_relevance=False)
    b = sparse[0].dedupe_key
    assert plan_relevance([dense, mute], None) == plan_relevance([dense], None)
    assert plan_relevance([dense, telling], None)[b] > plan_relevance([dense, mute], None)[b]
    # Fusion's order is the same either way.
    order = [h.chunk_id for h in normalized_fuse([dense, telling])]
    assert [h.chunk_id for h in normalized_fuse([dense, mute])] == order
    # When no list can tell, nothing is relevant.
    assert set(plan_relevance([mute], None).values()) == {0.0}


def test_an_extractive_answer_quotes_nothing_for_function_words_alone() -> None:
    refs = [Reference(1, "Solar", "The inverter is connected with copper cable.", "solar.md")]
    for question in ("what is it?", "is it", "the of and"):
        assert compose(question, refs, "en").startswith(NO_DIRECT_ANSWER), question
    assert compose("how is the inverter connected", refs, "en") == (
        "The inverter is connected with copper cable. [1]"
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def three_documents(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    """The embedded default with its bundled encoder: one KB of three short documents."""
    data = str(tmp_path_factory.mktemp("function-words"))
    app = await app_with_documents(data, "kb", DOCUMENTS)
    yield app
    await app.stop()


async def _relevance(app: EagleApp, question: str) -> list[float]:
    pack = await app.retrieval.search(QueryRequest(question, kb_names=("kb",), top_k=3))
    return [s["score"] for s in search_response(pack)["sources"]["text"]]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("question", ["what is it?", "the of and", "is it", "to be or not to be"])
async def test_function_words_alone_find_nothing_relevant(
    three_documents: EagleApp, question: str
) -> None:
    scores = await _relevance(three_documents, question)
    assert scores and max(scores) < 0.2, scores
    done = await three_documents.answers.answer(
        three_documents.answers.request(question, kb_names=("kb",))
    )
    assert done["answer"].startswith(NO_DIRECT_ANSWER), done["answer"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_question_with_content_words_is_unchanged(three_documents: EagleApp) -> None:
    scores = await _relevance(three_documents, "how is the inverter connected?")
    assert scores[0] > 0.6 and scores[1] < 0.3, scores
    done = await three_documents.answers.answer(
        three_documents.answers.request("how many days of leave?", kb_names=("kb",))
    )
    assert done["answer"].startswith("Employees get 25 days of paid leave a year"), done["answer"]
