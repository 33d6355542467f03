"""``wait_for_task`` keeps its deadline while the task's stream is silent: a task waiting in
the queue (or on one long page) sends nothing but keep-alive pings until it changes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from eagle_rag.client import AsyncEagleClient, EagleClient, Task
from eagle_rag.errors import BackendUnavailableError, InvalidInputError
from tests.http_fakes import serve

QUEUED = {"job_id": "j1", "document_id": "d1", "kb_name": "kb", "status": "queued"}
STREAM = {"content-type": "text/event-stream"}


def progress(task: dict[str, Any], name: str = "progress") -> bytes:
    return f"event: {name}\ndata: {json.dumps(task)}\n\n".encode()


def queued_for(seconds: float, ping_every: float) -> Iterator[tuple[bytes, float]]:
    """The stream of a task that stays queued ``seconds``, pinged, then completes."""
    yield progress(QUEUED), 0.0
    for _ in range(int(seconds / ping_every)):
        yield b": ping\n\n", ping_every
    yield progress({**QUEUED, "status": "completed"}, "done"), 0.0


def silent_for(seconds: float) -> Iterator[tuple[bytes, float]]:
    """The stream of a task that stays queued ``seconds`` without a byte (no pings)."""
    yield progress(QUEUED), 0.0
    yield progress({**QUEUED, "status": "completed"}, "done"), seconds


def stream_of(pieces: Iterator[tuple[bytes, float]]) -> Any:
    return lambda path, body, headers: (200, STREAM, pieces)


@pytest.mark.parametrize("pieces", [queued_for(6, 0.2), silent_for(6)])
def test_the_deadline_holds_while_the_task_makes_no_progress(pieces: Any) -> None:
    seen: list[Task] = []
    with serve(stream_of(pieces)) as (url, _):
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError) as late, EagleClient(url) as client:
            client.wait_for_task("j1", timeout_s=1, on_progress=seen.append)
    assert time.monotonic() - started < 3  # not the 6 s the task stays queued
    assert [t.status for t in seen] == ["queued"]
    # Silent or pinged, the error is the task's, not a transport failure's.
    assert str(late.value).startswith("task j1 did not finish in 1 s")
    assert late.value.fields == {"job_id": "j1", "task_status": "queued"}


def test_a_server_that_goes_away_is_still_its_own_error() -> None:
    client = EagleClient("http://127.0.0.1:9", max_retries=0)  # nothing listens there
    with client, pytest.raises(BackendUnavailableError, match="did not answer"):
        client.wait_for_task("j1", timeout_s=30)


async def test_the_async_deadline_holds_too() -> None:
    with serve(stream_of(queued_for(6, 0.2))) as (url, _):
        started = time.monotonic()
        async with AsyncEagleClient(url) as client:
            with pytest.raises(BackendUnavailableError, match="did not finish in 1 s"):
                await client.wait_for_task("j1", timeout_s=1)
    assert time.monotonic() - started < 3


def test_a_task_that_finishes_in_time_is_returned() -> None:
    with serve(stream_of(queued_for(0.6, 0.2))) as (url, _), EagleClient(url) as client:
        assert client.wait_for_task("j1", timeout_s=5).status == "completed"
        with pytest.raises(InvalidInputError, match="timeout_s"):
            client.wait_for_task("j1", timeout_s=0)
