"""The worker's TaskLoop: consecutive tasks share one event loop and its thread pool, and each
task logs under its own task id."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest
from celery import Celery, signals

from eagle_rag.ingest.task_loop import TaskLoop
from eagle_rag.logs import configure_logging, install_celery_logging
from eagle_rag.settings import load_settings

_SIGNALS = (signals.setup_logging, signals.task_prerun, signals.task_postrun)


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


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """JSON logs into a buffer, and the worker's Celery log signals connected for the test only."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    before = [list(signal.receivers) for signal in _SIGNALS]
    settings = load_settings({"EAGLE_LOG_FORMAT": "json"})
    stream = io.StringIO()
    configure_logging(settings, stream=stream)
    install_celery_logging(settings)
    yield stream
    for signal, receivers in zip(_SIGNALS, before, strict=True):
        for entry in [e for e in signal.receivers if e not in receivers]:
            signal.disconnect(entry[1])
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def test_each_task_logs_under_its_own_task_id(json_log: io.StringIO) -> None:
    # The worker's path: a Celery task (its task_prerun signal sets the id) runs its coroutine on
    # the process's one TaskLoop. The loop used to keep the first task's id for every later one.
    tasks = TaskLoop()
    celery = Celery("task-loop-test", broker="memory://", set_as_current=False)
    celery.conf.task_always_eager = True

    async def ingest(task_id: str) -> None:
        logging.getLogger("eagle_rag.ingest.test").warning("ingesting %s", task_id)
        await asyncio.to_thread(logging.getLogger("eagle_rag.ingest.test").warning, "in a thread")

    @celery.task(name="task-loop-test.ingest")  # type: ignore[untyped-decorator]
    def run_ingest(task_id: str) -> None:
        tasks.run(ingest(task_id))

    try:
        for task_id in ("task-first", "task-second", "task-third"):
            run_ingest.delay(task_id).get()
    finally:
        tasks.close()
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    ours = [line for line in lines if line["logger"].startswith("eagle_rag")]
    ids = [(line["message"], line.get("task_id")) for line in ours]
    assert ids == [
        ("ingesting task-first", "task-first"),
        ("in a thread", "task-first"),
        ("ingesting task-second", "task-second"),
        ("in a thread", "task-second"),
        ("ingesting task-third", "task-third"),
        ("in a thread", "task-third"),
    ]
