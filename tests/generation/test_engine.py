"""The answer engine on the real app: event order, citations, sessions, failures as events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.generation.engine import AnswerRequest
from eagle_rag.generation.prompt import Attachment
from tests.chat_fakes import openai_model, sse
from tests.http_fakes import json_answer
from tests.retrieval.conftest import Corpus

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def events(app: EagleApp, request: AnswerRequest) -> list[tuple[str, dict[str, Any]]]:
    return [event async for event in app.answers.stream(request)]


async def test_events_follow_the_grammar_and_citations_resolve(
    app: EagleApp, corpus: Corpus
) -> None:
    stream = await events(
        app, app.answers.request("how do I connect the inverter", kb_names=("alpha",))
    )
    names = [name for name, _ in stream]
    tokens = names.count("token")
    assert tokens > 1
    assert names == ["session", "step", "step", "step", "sources", *["token"] * tokens, "done"]
    assert [d["name"] for n, d in stream if n == "step"] == ["route", "recall", "rerank"]
    done = stream[-1][1]
    assert done["answer"] == "".join(d["delta"] for n, d in stream if n == "token")
    assert "copper cables" in done["answer"] and "[1]" in done["answer"]
    first = done["sources"]["text"][0]
    assert first["index"] == 1 and first["path"] == "Solar Guide/Installation/Wiring"
    assert first["filename"] == "solar.md" and first["document_id"] == corpus.solar
    assert len(done["sources"]["text"]) == app.settings.generation.top_n
    assert done["warnings"] == []
    generate = done["steps"][-1]
    assert generate["name"] == "generate" and generate["model"] == "extractive"
    assert generate["cited"] and generate["out_of_range"] == []


async def test_several_citations_in_one_bracket_are_checked_and_written_one_each(
    app: EagleApp, corpus: Corpus
) -> None:
    """A model's [1-2], 【3】 and [2, 9] were neither linked (the UI links [n]) nor checked."""
    request = app.answers.request("how do I connect the inverter", kb_names=("alpha",), top_n=3)
    with openai_model(app, lambda body: sse("Copper [1-2], see 【3】 and [2, 9].")):
        stream = await events(app, request)
    done = stream[-1][1]
    assert "".join(d["delta"] for n, d in stream if n == "token") == (
        "Copper [1-2], see 【3】 and [2, 9]."
    )
    assert done["answer"] == "Copper [1][2], see [3] and [2][9]."
    generate = done["steps"][-1]
    assert generate["cited"] == [1, 2, 3, 9] and generate["out_of_range"] == [9]
    assert done["warnings"] == ["the answer cites sources that were not sent: [9]"]
    stored = app.repositories.sessions.messages(done["session_id"])
    assert stored[-1].content == done["answer"]


async def test_the_answer_language_follows_the_query(app: EagleApp, corpus: Corpus) -> None:
    done = await app.answers.answer(app.answers.request("逆变器怎么连接", kb_names=("zh",)))
    assert done["answer"].startswith("逆变器需要用铜线连接")
    assert done["steps"][-1]["language"] == "zh"


async def test_attachments_get_a_step_and_reach_the_prompt(app: EagleApp, corpus: Corpus) -> None:
    request = app.answers.request(
        "what do the notes say about gloves",
        kb_names=("alpha",),
        attachments=(Attachment("notes.txt", "Always wear gloves on the roof."),),
    )
    with openai_model(app, lambda body: sse("Wear gloves.")) as recorded:
        stream = await events(app, request)
    assert [d["name"] for n, d in stream if n == "step"] == [
        "route",
        "recall",
        "attach_parse",
        "rerank",
    ]
    prompt = recorded.requests[0][1]["messages"][-1]["content"]
    assert "USER ATTACHMENTS" in prompt and "Always wear gloves on the roof." in prompt


async def test_the_offline_answer_cites_an_attachment_by_its_number(
    app: EagleApp, corpus: Corpus
) -> None:
    """An attachment reached the model's prompt but not the extractive answerer: offline, an
    attached answer was never used."""
    request = app.answers.request(
        "how many years does the warranty last",
        kb_names=("alpha",),
        attachments=(Attachment("note.txt", "The warranty lasts 12 years for the inverter."),),
    )
    done = await app.answers.answer(request)
    number = len(done["sources"]["text"]) + 1  # attachments are numbered after the texts
    assert f"The warranty lasts 12 years for the inverter. [{number}]" in done["answer"]
    assert done["steps"][-1]["out_of_range"] == []


async def test_sessions_carry_earlier_turns_and_store_messages(
    app: EagleApp, corpus: Corpus
) -> None:
    replies = iter([sse("Use copper cables [1]."), sse("Twice a year [1].")])
    with openai_model(app, lambda body: next(replies)) as recorded:
        first = await app.answers.answer(
            app.answers.request("how do I wire the inverter", kb_names=("alpha",))
        )
        second = await app.answers.answer(
            app.answers.request(
                "and how often do I clean it", kb_names=("alpha",), session_id=first["session_id"]
            )
        )
    assert second["session_id"] == first["session_id"]
    sent = recorded.requests[1][1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "how do I wire the inverter"
    assert sent[2]["content"] == "Use copper cables [1]."
    stored = app.repositories.sessions.messages(first["session_id"])
    assert [(m.role, m.content) for m in stored] == [
        ("user", "how do I wire the inverter"),
        ("assistant", "Use copper cables [1]."),
        ("user", "and how often do I clean it"),
        ("assistant", "Twice a year [1]."),
    ]
    assert stored[1].sources["text"][0]["index"] == 1
    assert stored[1].steps[-1]["name"] == "generate"


async def test_out_of_range_citations_are_reported(app: EagleApp, corpus: Corpus) -> None:
    with openai_model(app, lambda body: sse("It says so [1] and [9].")):
        done = await app.answers.answer(
            app.answers.request("inverter", kb_names=("alpha",), top_n=2)
        )
    assert done["warnings"] == ["the answer cites sources that were not sent: [9]"]
    assert done["steps"][-1]["out_of_range"] == [9]
    assert done["steps"][-1]["status"] == "warning"
    assert done["steps"][-1]["detail"] == done["warnings"][0]


async def test_a_failing_model_ends_the_stream_with_an_error_event(
    app: EagleApp, corpus: Corpus
) -> None:
    with openai_model(app, lambda body: json_answer(503, {"error": "down"})):
        stream = await events(app, app.answers.request("inverter", kb_names=("alpha",)))
    assert [n for n, _ in stream][-2:] == ["sources", "error"]
    assert stream[-1][1]["code"] == "backend_unavailable"


async def test_a_question_left_unanswered_leaves_no_session_it_opened(
    app: EagleApp, corpus: Corpus
) -> None:
    """A chat model down, or a client gone mid-stream, left an empty session listed by
    /sessions (the 503 body did not even name it)."""
    before = {s.id for s in app.repositories.sessions.list()}
    with openai_model(app, lambda body: json_answer(503, {"error": "down"})):
        stream = await events(app, app.answers.request("inverter", kb_names=("alpha",)))
        result = await app.answers.answer(app.answers.request("inverter", kb_names=("alpha",)))
    assert [n for n, _ in stream][-1] == "error" and "session_id" not in result
    broken = b'data: {"choices": [{"delta": {"content": "Partial [1] "}}]}\n\ndata: {not json\n\n'
    with openai_model(app, lambda body: (200, {"content-type": "text/event-stream"}, broken)):
        result = await app.answers.answer(app.answers.request("inverter", kb_names=("alpha",)))
    assert result["error"]["code"] == "model_provider_error" and "session_id" not in result
    with openai_model(app, lambda body: sse("Copper ", "cables [1].")):
        answers = app.answers.stream(app.answers.request("inverter", kb_names=("alpha",)))
        async for name, _ in answers:
            if name == "token":
                break
        await answers.aclose()  # the client went away
    assert {s.id for s in app.repositories.sessions.list()} == before


async def test_a_failed_turn_keeps_the_session_it_continues_as_it_was(
    app: EagleApp, corpus: Corpus
) -> None:
    """A failed turn still widened the session to its KBs, though it added nothing from them."""
    first = await app.answers.answer(app.answers.request("inverter", kb_names=("alpha",)))
    session_id = first["session_id"]
    follow = app.answers.request("tomatoes", kb_names=("beta",), session_id=session_id)
    with openai_model(app, lambda body: json_answer(503, {"error": "down"})):
        result = await app.answers.answer(follow)
    assert result["session_id"] == session_id and result["error"]["code"] == "backend_unavailable"
    assert app.repositories.sessions.get(session_id).kb_names == ("alpha",)
    assert len(app.repositories.sessions.messages(session_id)) == 2
    answered = await app.answers.answer(follow)
    assert answered["answer"]
    assert app.repositories.sessions.get(session_id).kb_names == ("alpha", "beta")


@pytest.mark.parametrize(
    ("request_options", "code"),
    [
        ({"kb_names": ("nope",)}, "not_found"),
        ({"session_id": "no-such-session"}, "not_found"),
        ({"top_n": 0}, "invalid_input"),
        ({"query": " "}, "invalid_input"),
    ],
)
async def test_bad_requests_become_one_error_event(
    app: EagleApp, corpus: Corpus, request_options: dict[str, Any], code: str
) -> None:
    before = len(app.repositories.sessions.list())
    options = {"query": "inverter", **request_options}
    stream = await events(app, app.answers.request(**options))
    assert [n for n, _ in stream] == ["error"]
    assert stream[0][1]["code"] == code
    assert len(app.repositories.sessions.list()) == before  # no empty session left behind
    json.dumps(stream)  # every event is JSON-serialisable
