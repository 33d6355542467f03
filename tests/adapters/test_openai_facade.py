"""The OpenAI-compatible facade, driven by the official ``openai`` package."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.adapters.conftest import KEY, SCOPED_KEY
from tests.api.server import RunningServer


def chat(server: RunningServer, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def extra(item: Any) -> dict[str, Any]:
    found: dict[str, Any] = (item.model_extra or {})["eagle"]
    return found


def test_models_are_the_callers_kbs(server: RunningServer, corpus: dict[str, str]) -> None:
    assert {m.id for m in chat(server).models.list()} >= {"eagle:energy", "eagle:garden"}
    assert [m.id for m in chat(server, SCOPED_KEY).models.list()] == ["eagle:garden"]
    assert chat(server).models.retrieve("eagle:energy").owned_by == "eagle-rag"
    assert chat(server).models.retrieve("eagle:energy+garden").id == "eagle:energy+garden"
    with pytest.raises(openai.NotFoundError):
        chat(server).models.retrieve("eagle:energy+nope")


def test_answer_with_citations_and_sources(server: RunningServer, corpus: dict[str, str]) -> None:
    completion = chat(server).chat.completions.create(
        model="eagle:energy",
        messages=[
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "How is the inverter connected?"},
        ],
    )
    text = completion.choices[0].message.content or ""
    sources = extra(completion)["sources"]["text"]
    assert "[1]" in text and completion.choices[0].finish_reason == "stop"
    assert sources[0]["index"] == 1 and sources[0]["path"] == "Solar Guide/Installation/Wiring"
    assert "copper cables" in sources[0]["content"] and 0 <= sources[0]["score"] <= 1
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    assert completion.model == "eagle:energy" and completion.id.startswith("chatcmpl-")


def test_streamed_answer(server: RunningServer, corpus: dict[str, str]) -> None:
    stream = chat(server).chat.completions.create(
        model="eagle:energy+garden",
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "When to water tomatoes?"}]}
        ],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    final = next(c for c in chunks if c.choices and c.choices[0].finish_reason == "stop")
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    assert "[1]" in text and "watering" in text
    cited = extra(final)["sources"]["text"]
    assert cited[0]["filename"] == "garden.md" and cited[0]["kb_name"] == "garden"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def raw_chunks(server: RunningServer, stream_options: dict[str, Any] | None) -> list[Any]:
    """The stream's JSON chunks as sent (the SDK's models hide a missing key behind None)."""
    body = {
        "model": "eagle:garden",
        "stream": True,
        "messages": [{"role": "user", "content": "When to water tomatoes?"}],
        **({"stream_options": stream_options} if stream_options else {}),
    }
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.stream(
        "POST", server.url + "/v1/chat/completions", json=body, headers=headers, timeout=60
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]


def test_streamed_usage_is_null_until_the_last_chunk(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    """OpenAI's rule for ``include_usage``: every chunk but the last has ``"usage": null``; the
    last has no choices and the counts. Without it, no chunk has the key."""
    chunks = raw_chunks(server, {"include_usage": True})
    assert len(chunks) > 2 and all("usage" in c and c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all("usage" not in c for c in raw_chunks(server, None))


def test_history_becomes_the_session(server: RunningServer, corpus: dict[str, str]) -> None:
    completion = chat(server).chat.completions.create(
        model="eagle:energy",
        messages=[
            {"role": "user", "content": "How are panels mounted?"},
            {"role": "assistant", "content": "With steel brackets [1]."},
            {"role": "user", "content": "How many bolts per bracket?"},
        ],
    )
    session_id = extra(completion)["session_id"]
    messages = server.client(Authorization=f"Bearer {KEY}").get(f"/sessions/{session_id}/messages")
    contents = [m["content"] for m in messages.json()["messages"]]
    assert contents[:3] == [
        "How are panels mounted?",
        "With steel brackets [1].",
        "How many bolts per bracket?",
    ]
    assert "eight bolts" in (completion.choices[0].message.content or "")
    again = chat(server).chat.completions.create(
        model="eagle:energy",
        messages=[{"role": "user", "content": "And the inverter?"}],
        extra_body={"eagle": {"session_id": session_id, "top_n": 2}},
    )
    assert extra(again)["session_id"] == session_id
    assert len(extra(again)["sources"]["text"]) <= 2


def test_errors_are_openai_errors(server: RunningServer, corpus: dict[str, str]) -> None:
    client = chat(server)
    question = [{"role": "user", "content": "x"}]
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=question)
    assert unknown.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError, match="nope") as no_kb:
        client.chat.completions.create(model="eagle:nope", messages=question)
    assert no_kb.value.code == "model_not_found"  # was "not_found": clients check this code
    # Options that would change the answer's form are refused, not silently ignored.
    for option in (
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
        {"response_format": {"type": "json_object"}},
    ):
        with pytest.raises(openai.BadRequestError, match="is not supported") as refused:
            client.chat.completions.create(model="eagle:energy", messages=question, **option)
        assert refused.value.param == next(iter(option))
    plain = {"type": "text"}
    answered = client.chat.completions.create(
        model="eagle:energy", messages=question, response_format=plain, tool_choice="none"
    )
    assert answered.choices[0].message.content
    with pytest.raises(openai.BadRequestError, match="last message"):
        client.chat.completions.create(
            model="eagle:energy",
            messages=[{"role": "assistant", "content": "hi"}],
        )
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="eagle:energy", messages=[])
    with pytest.raises(openai.AuthenticationError):
        chat(server, "wrong").models.list()
    with pytest.raises(openai.PermissionDeniedError, match="energy"):
        chat(server, SCOPED_KEY).chat.completions.create(model="eagle:energy", messages=question)
