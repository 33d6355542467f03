"""Task queues. In-process workers are the embedded default (Milvus Lite allows one process, so
the API and the workers share it); Celery on Redis is the production queue (celery_app.py).

At-least-once: a task may run twice (a retry, a worker restart); chunk ids are deterministic and a
run first deletes the document's rows, so a second run leaves exactly what one run leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)

Runner = Callable[[str], Awaitable[object]]
IdleHook = Callable[[], Awaitable[None]]


class InProcessQueue:
    """``workers`` asyncio tasks pulling task ids; CPU work inside runs in threads.

    When the queue drains, ``on_idle`` runs once (the app flushes Milvus there: searches over
    sealed segments are an order of magnitude faster, and one flush per batch is cheap).
    """

    def __init__(self, runner: Runner, *, workers: int, on_idle: IdleHook | None = None) -> None:
        self._runner = runner
        self._workers = workers
        self._on_idle = on_idle
        self._queue: asyncio.Queue[str] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy = 0

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._tasks = [asyncio.create_task(self._work(i)) for i in range(self._workers)]

    def submit(self, task_id: str) -> None:
        """Thread-safe: the API may submit from a request thread."""
        if self._queue is None or self._loop is None:
            raise RuntimeError("the in-process queue is not started")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._queue.put_nowait(task_id)
        else:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, task_id)

    async def join(self) -> None:
        """Wait until every submitted task has run (CLI and tests)."""
        if self._queue is not None:
            await self._queue.join()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _work(self, index: int) -> None:
        assert self._queue is not None
        while True:
            task_id = await self._queue.get()
            self._busy += 1
            try:
                await self._runner(task_id)
            except Exception:  # the runner records failures; never let a worker die
                logger.exception("worker %d: task %s crashed", index, task_id)
            finally:
                self._busy -= 1
                if self._queue.empty() and self._busy == 0 and self._on_idle is not None:
                    try:
                        await self._on_idle()
                    except Exception:
                        logger.exception("idle hook failed")
                self._queue.task_done()
