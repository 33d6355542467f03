"""Retries on 429 and 503, honouring Retry-After: a real rate-limited server, and a local server
that answers 503 the way a proxy in front of Eagle-RAG does."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eagle_rag.client import AsyncEagleClient, EagleClient
from eagle_rag.errors import BackendUnavailableError, RateLimitedError
from tests.api.server import RunningServer, running_server
from tests.http_fakes import json_answer, serve

RESULT = {"query": "q", "kb_names": [], "sources": {"text": [], "image": []}, "steps": []}


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    # 120 a minute: a burst of 120, then one request every 0.5 s (Retry-After: 1).
    keys = [{"name": "k", "key": "k"}]
    with running_server(
        tmp_path_factory.mktemp("limited"),
        server={"api_keys": keys, "rate_limit_per_minute": 120},
    ) as running:
        yield running


def test_429_is_retried_after_retry_after(limited: RunningServer) -> None:
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    with EagleClient(limited.url, api_key="k", max_retries=0) as impatient:
        with pytest.raises(RateLimitedError) as refused:
            for _ in range(200):
                impatient.list_knowledge_bases()
        assert refused.value.fields["status"] == 429
    with EagleClient(limited.url, api_key="k", max_retries=3, sleep=sleep) as patient:
        # The bucket refills 2 a second: five calls in a row must wait at least twice.
        assert [patient.list_knowledge_bases() for _ in range(5)] == [[]] * 5
    assert len(waits) >= 2 and set(waits) == {1.0}


def scripted(answers: list[tuple[int, dict[str, str]]]) -> Any:
    """Answer each request with the next scripted (status, headers), then 200."""

    def handler(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        if answers:
            status, extra = answers.pop(0)
            return json_answer(
                status, {"code": "backend_unavailable", "message": "warming up"}, **extra
            )
        return json_answer(200, RESULT)

    return handler


def test_503_waits_as_told_then_gives_up(tmp_path: Path) -> None:
    waits: list[float] = []
    answers = [(503, {"Retry-After": "2"}), (503, {})]
    with serve(scripted(answers)) as (url, recorded):
        client = EagleClient(url, max_retries=2, sleep=waits.append)
        assert client.search("q").sources.text == ()
        assert waits == [2.0, 1.0]  # Retry-After, then backoff 0.5 * 2**1
        assert len(recorded.requests) == 3

        answers.extend([(503, {"Retry-After": "999"})] * 3)
        waits.clear()
        with pytest.raises(BackendUnavailableError, match="warming up"):
            client.search("q")
        assert waits == [30.0, 30.0]  # capped at max_retry_wait_s, then the last answer raised


async def test_async_retries_too() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with serve(scripted([(429, {"Retry-After": "3"})])) as (url, _):
        async with AsyncEagleClient(url, sleep=sleep) as client:
            assert (await client.search("q")).query == "q"
    assert waits == [3.0]
