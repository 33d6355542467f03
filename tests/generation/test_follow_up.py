"""Follow-up questions of a session are searched with the question they follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.generation.extractive import compose
from eagle_rag.generation.follow_up import is_follow_up, standalone_query
from eagle_rag.generation.prompt import Reference
from eagle_rag.retrieval.service import MAX_QUERY_CHARS
from tests.embedded import app_with_documents
from tests.retrieval.conftest import Corpus

OUTPUT_2020 = "What was the output of the Calder plant in 2020?"


@pytest.mark.parametrize(
    "question",
    [
        "and in 2021?",
        "What about Singapore?",
        "In 2021?",
        "那 2021 年呢？",
        "Juniper?",
        "What year?",
        "Who is he?",
        "What does that mean?",
        "他们的电话是多少？",
        "What is the price?",
        "价格是多少？",
    ],
)
def test_questions_that_lean_on_the_one_before(question: str) -> None:
    assert is_follow_up(question)


@pytest.mark.parametrize(
    "question",
    [
        OUTPUT_2020,
        "What is the phone number of the HSE lead?",
        "X5 的标准保修期是多久？",
        "Who is the security officer?",
        "安全官是谁？",
    ],
)
def test_questions_that_stand_on_their_own(question: str) -> None:
    assert not is_follow_up(question)


def test_a_follow_up_is_searched_with_the_question_that_started_the_topic() -> None:
    history = [OUTPUT_2020, "and in 2021?"]
    assert standalone_query("and in 2022?", history) == f"{OUTPUT_2020} and in 2021? and in 2022?"
    assert standalone_query("Who leads HSE at Juniper?", history) == "Who leads HSE at Juniper?"
    assert standalone_query("and in 2022?", []) == "and in 2022?"
    restarted = [OUTPUT_2020, "and in 2021?", "Who leads HSE at Juniper?"]
    searched = standalone_query("and at Calder?", restarted)
    assert searched == "Who leads HSE at Juniper? and at Calder?"


def test_a_whole_question_of_few_words_is_searched_alone() -> None:
    """ "Who is the security officer?" after a question about annual leave has two words of its
    own: it was searched joined to the leave question and answered with the leave policy."""
    earlier = ["How many days of annual leave do full-time employees get?"]
    asked = "Who is the security officer?"
    assert standalone_query(asked, earlier) == asked


def test_a_long_chain_keeps_its_first_question_and_newest_turns_within_the_limit() -> None:
    """A 3966-character question and three follow-ups made a search text over 4000 characters,
    which the search refused: the follow-up failed as too long."""
    first = "What is the chassis colour of the Zorblax-112 " + "really " * 559 + "?"
    earlier = [first, "and its weight?", "and in 2021?"]
    searched = standalone_query("what about the motor?", earlier)
    assert len(searched) <= MAX_QUERY_CHARS
    assert searched == f"{first} and in 2021? what about the motor?"
    assert standalone_query("and in 2022?", ["x" * 3000], limit=20) == "xxxxxxx and in 2022?"
    whole = "and " + "y" * (MAX_QUERY_CHARS - 4)
    assert standalone_query(whole, [first]) == whole


@pytest.mark.asyncio(loop_scope="module")
async def test_the_offline_answer_to_a_follow_up_uses_the_conversation(
    app: EagleApp, corpus: Corpus
) -> None:
    """ "And the brackets?" alone quoted every sentence that names a bracket, the mounting one
    first; after a question about cleaning it is about cleaning them."""
    first = await app.answers.answer(
        app.answers.request("How often should I clean the panels?", kb_names=("alpha",))
    )
    follow = await app.answers.answer(
        app.answers.request(
            "and the brackets?", kb_names=("alpha",), session_id=first["session_id"]
        )
    )
    recall = next(step for step in follow["steps"] if step["name"] == "recall")
    assert recall["query"] == "How often should I clean the panels? and the brackets?"
    assert follow["answer"].startswith(
        "Clean the panels twice a year with water and inspect the brackets for rust."
    )


@pytest.mark.parametrize("padding", [0, 560])
@pytest.mark.asyncio(loop_scope="module")
async def test_a_chain_of_follow_ups_keeps_its_first_question_past_the_history(
    app: EagleApp, corpus: Corpus, padding: int
) -> None:
    """The engine rebuilt the chain from the last ``history_turns`` messages only: after three
    follow-ups the question that started it was gone from the search. A long one (padded) made
    the chain too long to search."""
    first = "How often should I clean the panels? " + "please " * padding
    done = await app.answers.answer(app.answers.request(first, kb_names=("alpha",)))
    session_id = done["session_id"]
    for follow in ["and the brackets?", "and the bolts?", "and the roof?", "and the cables?"]:
        done = await app.answers.answer(
            app.answers.request(follow, kb_names=("alpha",), session_id=session_id)
        )
        assert "error" not in done, done
        recall = next(step for step in done["steps"] if step["name"] == "recall")
        assert recall["query"].startswith(first.rstrip()), recall["query"][:80]
        assert recall["query"].endswith(follow) and len(recall["query"]) <= MAX_QUERY_CHARS


SERVICE_GUIDE = """# HP-12 Service Guide

## Refrigerant

The HP-12 heat pump uses R32 refrigerant. The factory charge is 1.45 kg.

## Fault codes

Fault F7 indicates a high-pressure trip of the compressor. Fault F9 means the condensate drain
is blocked; clear the drain and restart the unit.
"""


@pytest.mark.asyncio
async def test_a_follow_up_with_a_topic_of_its_own_is_answered_for_itself(tmp_path: Path) -> None:
    """ "and what does fault F9 mean?" after a question about the refrigerant charge was
    searched with both (right), then answered for both: the charge again, F7, never F9."""
    app = await app_with_documents(str(tmp_path), "kb", {"hp12.md": SERVICE_GUIDE})
    try:
        first = await app.answers.answer(
            app.answers.request(
                "What is the factory refrigerant charge of the HP-12?", kb_names=("kb",)
            )
        )
        assert "1.45 kg" in first["answer"]
        follow = await app.answers.answer(
            app.answers.request(
                "and what does fault F9 mean?", kb_names=("kb",), session_id=first["session_id"]
            )
        )
    finally:
        await app.stop()
    recall = next(step for step in follow["steps"] if step["name"] == "recall")
    assert recall["query"].startswith("What is the factory refrigerant charge")
    assert "Fault F9 means the condensate drain is blocked" in follow["answer"]
    assert "1.45 kg" not in follow["answer"]
    assert "F7" not in follow["answer"]


def test_the_question_followed_breaks_ties_and_answers_a_follow_up_without_words() -> None:
    table = Reference(
        1,
        "Output",
        "In 2021 the Kestrel plant produced 280 GWh. In 2021 the Calder plant produced 351 GWh.",
    )
    searched = f"{OUTPUT_2020} and in 2021?"
    assert compose("and in 2021?", [table], "en", searched=searched) == (
        "In 2021 the Calder plant produced 351 GWh. [1]"
    )
    why = Reference(1, "Output", "Calder's output rose because a second turbine came online.")
    assert compose("why?", [why], "en", searched=f"{OUTPUT_2020} why?").startswith("Calder's")


LEAVE = Reference(
    1,
    "Human Resources Policy/Leave",
    "### Parental leave\nParents are entitled to 16 weeks of paid parental leave.\n\n"
    "### Sick leave\nEmployees must notify their manager before 10:00 on the first day of "
    "sickness. A doctor's certificate is required from the fourth day.",
)


def test_a_follow_up_is_not_answered_with_the_topic_of_the_question_it_follows() -> None:
    """ "and sick leave?" after "How long is parental leave?" quoted the parental-leave sentence
    first: it matches "leave" of the question asked and "parental" of the earlier one, and so
    was no part of the sick-leave sentences' "sick" and "leave"."""
    searched = "How long is parental leave? and sick leave?"
    answer = compose("and sick leave?", [LEAVE], "en", searched=searched)
    assert answer == compose("and sick leave?", [LEAVE], "en")
    assert answer.startswith("Employees must notify their manager") and "Parents" not in answer
    assert "A doctor's certificate is required from the fourth day. [1]" in answer
