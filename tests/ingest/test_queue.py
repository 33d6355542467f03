"""The in-process queue's workers when a task cannot run at all."""

from __future__ import annotations

import asyncio
import logging

import pytest

from eagle_rag.errors import BackendUnavailableError
from eagle_rag.ingest.queue import InProcessQueue


def _run_one(runner: object) -> None:
    async def run() -> None:
        queue = InProcessQueue(runner, workers=1)  # type: ignore[arg-type]
        await queue.start()
        try:
            queue.submit("task-1")
            await queue.join()
        finally:
            await queue.stop()

    asyncio.run(run())


def test_a_catalog_that_cannot_be_written_is_one_line_per_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A full disk failed every queued task's claim: each logged a 60-line traceback as
    "crashed" (55 of them here), for an outage the runner could not even record."""

    async def unavailable(task_id: str) -> None:
        raise BackendUnavailableError(
            "metadata database unavailable: database or disk is full", backend="sqlite"
        )

    with caplog.at_level(logging.INFO, logger="eagle_rag.ingest.queue"):
        _run_one(unavailable)
    [record] = [r for r in caplog.records if r.name == "eagle_rag.ingest.queue"]
    assert record.levelno == logging.ERROR and record.exc_info is None
    assert "task-1 could not run" in record.getMessage()
    assert "database or disk is full" in record.getMessage()


def test_any_other_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(task_id: str) -> None:
        raise RuntimeError("a bug")

    _run_one(broken)
    [record] = [r for r in caplog.records if r.name == "eagle_rag.ingest.queue"]
    assert "crashed" in record.getMessage() and record.exc_info is not None
