"""The worker's TaskLoop: consecutive tasks share one event loop and its thread pool."""

from __future__ import annotations

import asyncio
import threading

import pytest

from eagle_rag.ingest.task_loop import TaskLoop


async def _where() -> tuple[asyncio.AbstractEventLoop, int]:
    """The loop this task runs on, and the thread that ran its to_thread call."""
    thread = await asyncio.to_thread(threading.get_ident)
    return asyncio.get_running_loop(), thread


def test_consecutive_tasks_share_the_loop_and_its_threads() -> None:
    tasks = TaskLoop()
    try:
        first_loop, first_thread = tasks.run(_where())
        second_loop, second_thread = tasks.run(_where())
        assert first_loop is second_loop  # asyncio.run would build a new loop per task
        assert first_thread == second_thread  # and start a new pool thread per task
        assert tasks.loop() is first_loop
    finally:
        tasks.close()
    assert first_loop.is_closed()
    assert tasks.loop() is None


def test_a_failing_task_raises_and_the_next_one_runs() -> None:
    tasks = TaskLoop()

    async def broken() -> None:
        raise ValueError("bad document")

    try:
        with pytest.raises(ValueError, match="bad document"):
            tasks.run(broken())
        loop, _ = tasks.run(_where())
        assert not loop.is_closed()
    finally:
        tasks.close()


def test_close_from_inside_a_running_task_leaves_the_loop_alone() -> None:
    tasks = TaskLoop()

    async def shut_down_meanwhile() -> asyncio.AbstractEventLoop:
        tasks.close()  # what a shutdown signal handled inside a solo pool's task does
        await asyncio.sleep(0)
        return asyncio.get_running_loop()

    try:
        loop = tasks.run(shut_down_meanwhile())
        assert not loop.is_closed()
        assert tasks.loop() is loop
    finally:
        tasks.close()
    assert loop.is_closed()
