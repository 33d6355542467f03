"""Task queues. In-process workers are the embedded default (Milvus Lite allows one process, so
the API and the workers share it); Celery on Redis is the production queue (celery_app.py).

At-least-once: a task may run twice (a retry, a worker restart); chunk ids are deterministic and a
run first deletes the document's rows, so a second run leaves exactly what one run leaves.

Durable: the queue lives in memory, but every task it holds carries its lease in the database
(leases.py). A heartbeat renews them; at start-up and on every beat the queue re-queues stranded
tasks (a previous process killed, a lease that expired, a transient failure's retry falling due),
so nothing that was queued or running when a process died stays stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from eagle_rag.errors import BackendUnavailableError
from eagle_rag.ingest.leases import Leases
from eagle_rag.ingest.priority import INGEST_WORK, install_split_executor

logger = logging.getLogger(__name__)
THREADS_PER_WORKER = 2

Runner = Callable[..., Awaitable[object]]  # (task_id, owner=...) with leases, else (task_id)
IdleHook = Callable[[], Awaitable[None]]
LostCheck = Callable[[Leases], list[str]]  # completed tasks a crash took the vectors of


class InProcessQueue:
    """``workers`` asyncio tasks pulling task ids; CPU work inside runs in threads.

    When the queue drains, ``on_idle`` runs once (the app flushes Milvus there: searches over
    sealed segments are an order of magnitude faster, and one flush per batch is cheap).
    """

    def __init__(
        self,
        runner: Runner,
        *,
        workers: int,
        on_idle: IdleHook | None = None,
        leases: Leases | None = None,
        lost: LostCheck | None = None,
        nice: int = 0,
    ) -> None:
        self._runner = runner
        self._workers = workers
        self._on_idle = on_idle
        self._leases = leases
        self._lost = lost
        self._queue: asyncio.Queue[str] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy = 0
        self._held: set[str] = set()  # queued here or running: the leases the heartbeat renews
        self._nice = nice  # > 0: the workers' thread work runs that much lower (priority.py)

    @property
    def owner(self) -> str | None:
        """The lease owner id of this queue's process (None without leases)."""
        return self._leases.owner if self._leases else None

    @property
    def lease_s(self) -> float | None:
        return self._leases.lease_s if self._leases else None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._nice > 0:
            # Two threads a worker: a document's visual extraction runs beside its embedding
            # (pipeline._write); with one, they took turns and the overlap never happened.
            install_split_executor(self._loop, THREADS_PER_WORKER * self._workers, self._nice)
        self._queue = asyncio.Queue()
        self._tasks = [asyncio.create_task(self._work(i)) for i in range(self._workers)]
        if self._leases is not None:
            await self._recover(starting=True)  # what a previous process left behind
            self._tasks.append(asyncio.create_task(self._heartbeat()))

    def submit(self, task_id: str) -> None:
        """Thread-safe: the API may submit from a request thread."""
        if self._queue is None or self._loop is None:
            raise BackendUnavailableError(
                "the in-process ingest queue is not running (the server is starting or "
                "stopping); try again shortly",
                backend="ingest_queue",
                retry_after=5,
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._enqueue(task_id)
        else:
            self._loop.call_soon_threadsafe(self._enqueue, task_id)

    def _enqueue(self, task_id: str) -> None:
        assert self._queue is not None
        if task_id in self._held:  # already waiting or running here
            return
        self._held.add(task_id)
        self._queue.put_nowait(task_id)

    def health(self) -> str:
        """Raise if the queue is not running or a worker died; else what it holds."""
        alive = sum(1 for t in self._tasks if not t.done())
        if self._queue is None or alive < len(self._tasks) or not self._tasks:
            raise BackendUnavailableError(
                f"the in-process ingest queue is not running ({alive} of "
                f"{len(self._tasks)} workers alive)",
                backend="ingest_queue",
            )
        return f"{self._workers} workers, {len(self._held)} tasks held, {self._busy} running"

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
        self._queue = None  # submissions now get a clear 503, not a task nobody runs
        if self._leases is not None and self._held:
            # A clean stop hands its leases back: the next start runs them without waiting.
            try:
                await asyncio.to_thread(self._leases.release, set(self._held))
                logger.info(
                    "stopped with %d unfinished ingest task(s); the next start runs them",
                    len(self._held),
                )
            except Exception:
                logger.exception("could not release the leases of %d tasks", len(self._held))
        self._held.clear()

    async def _recover(self, *, starting: bool = False) -> None:
        assert self._leases is not None
        if starting and self._lost is not None:
            try:
                for task_id in await asyncio.to_thread(self._lost, self._leases):
                    self._enqueue(task_id)
            except Exception:
                logger.exception("could not check completed tasks for lost vectors")
        try:
            recovered = await asyncio.to_thread(self._leases.recover, hold=True)
        except Exception:  # the database may be down: the next beat tries again
            logger.exception("could not look for stranded ingest tasks")
            return
        for task_id in recovered:
            self._enqueue(task_id)

    async def _heartbeat(self) -> None:
        assert self._leases is not None
        while True:
            await asyncio.sleep(self._leases.interval_s)
            try:
                await asyncio.to_thread(self._leases.renew, set(self._held))
            except Exception:
                logger.exception("could not renew the leases of %d tasks", len(self._held))
            await self._recover()

    async def _run(self, task_id: str) -> Any:
        if self._leases is None:
            return await self._runner(task_id)
        return await self._runner(task_id, owner=self._leases.owner)

    async def _work(self, index: int) -> None:
        assert self._queue is not None
        INGEST_WORK.set(True)  # this task's context only: its thread work, the ingest pool's
        while True:
            task_id = await self._queue.get()
            self._busy += 1
            stopped = False
            try:
                await self._run(task_id)
            except asyncio.CancelledError:
                stopped = True  # by stop(): still held, so stop() hands its lease back too
                raise
            except BackendUnavailableError as exc:
                # The catalog cannot be written (a full disk, a database that does not answer):
                # the runner could not even record it. One line, not a traceback per queued
                # task; the lease this worker lets go runs out and recovery queues it again.
                logger.error(
                    "worker %d: task %s could not run, it is retried once its lease runs out: %s",
                    index,
                    task_id,
                    exc,
                )
            except Exception:  # the runner records failures; never let a worker die
                logger.exception("worker %d: task %s crashed", index, task_id)
            finally:
                if not stopped:
                    self._held.discard(task_id)
                self._busy -= 1
                if self._queue.empty() and self._busy == 0 and self._on_idle is not None:
                    try:
                        await self._on_idle()
                    except Exception:
                        logger.exception("idle hook failed")
                self._queue.task_done()
