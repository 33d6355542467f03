"""The OpenAI-compatible streaming chat client against a local server speaking the protocol."""

from __future__ import annotations

import time
from typing import Any

import pytest

from eagle_rag.errors import BackendUnavailableError, ModelProviderError
from eagle_rag.models.chat import GenerationInput, OpenAICompatibleChat
from tests.chat_fakes import sse
from tests.http_fakes import json_answer, serve

JOB = GenerationInput("q", "en", [{"role": "user", "content": "hello"}])


async def collect(client: OpenAICompatibleChat) -> str:
    return "".join([d async for d in client.stream(JOB)])


def chat(url: str, **options: Any) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(base_url=url + "/v1", model="m", backoff_s=0, **options)


async def test_streams_deltas_and_sends_the_messages() -> None:
    with serve(lambda *_: sse("The answer", " is 42 [1].")) as (url, recorded):
        answer = await collect(chat(url, api_key="key", max_tokens=64))
    assert answer == "The answer is 42 [1]."
    path, body, headers = recorded.requests[0]
    assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer key"
    assert body["stream"] is True and body["model"] == "m" and body["max_tokens"] == 64
    assert body["messages"] == [{"role": "user", "content": "hello"}]


async def test_overload_before_the_first_token_is_retried() -> None:
    answers = iter([json_answer(429, {"error": "slow"}, **{"retry-after": "0"}), sse("ok")])
    with serve(lambda *_: next(answers)) as (url, recorded):
        assert await collect(chat(url)) == "ok"
    assert len(recorded.requests) == 2


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        (json_answer(401, {"error": "bad key"}), ModelProviderError, "refused the request \\(401"),
        (json_answer(503, {"error": "down"}), BackendUnavailableError, "kept failing"),
        (
            (200, {}, b'data: {"choices": [{"delta": {"content": "a"}}]}\n\ndata: {oops\n\n'),
            ModelProviderError,
            "malformed event",
        ),
        (
            (200, {}, b'data: {"error": {"message": "content filter"}}\n\n'),
            ModelProviderError,
            "content filter",
        ),
    ],
)
async def test_failures_are_clear(reply: Any, error: type[Exception], message: str) -> None:
    with serve(lambda *_: reply) as (url, recorded), pytest.raises(error, match=message):
        await collect(chat(url, max_retries=1))
    if error is ModelProviderError and "401" in message:
        assert len(recorded.requests) == 1


async def test_a_silent_server_times_out() -> None:
    def slow(*_: Any) -> Any:
        time.sleep(0.6)
        return sse("late")

    with serve(slow) as (url, _), pytest.raises(BackendUnavailableError, match="timed out"):
        await collect(chat(url, timeout_s=0.2, max_retries=0))
