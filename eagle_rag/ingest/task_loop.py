"""One event loop for all the tasks a worker process runs, instead of ``asyncio.run`` per task.

``asyncio.run`` builds a loop and a default thread pool for each task and joins that pool's
threads when the task ends. Every ``asyncio.to_thread`` of the pipeline (the claim, the object
read, the embedder call, the completion) then starts a fresh thread, once per document: a
measurable share of a short document's time on a small machine, paid again by each worker.
The pipeline keeps no loop-bound state between tasks, so one loop per process is safe; it is
made lazily, in the process that runs the task (a prefork pool's child, after the fork).

Each task runs in a copy of the caller's context, taken when it starts: a Runner otherwise runs
every task in the one context it copied on first use, so the task id that Celery's
``task_prerun`` signal sets (logs.py) stayed the first task's on every later task's log lines.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class TaskLoop:
    """Runs each task's coroutine to completion on this process's one event loop."""

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None
        self._lock = threading.Lock()  # a task and the shutdown signal may race on close
        self._running = 0

    def run(self, task: Coroutine[Any, Any, T]) -> T:
        """Run ``task`` to completion, in a copy of the calling thread's current context."""
        with self._lock:
            if self._runner is None:
                self._runner = asyncio.Runner()
            runner = self._runner
            self._running += 1
        try:
            return runner.run(task, context=contextvars.copy_context())
        finally:
            with self._lock:
                self._running -= 1

    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop tasks run on (None before the first task or after close)."""
        return None if self._runner is None else self._runner.get_loop()

    def close(self) -> None:
        """End the loop and join its thread pool (the worker process is going).

        Not while a task runs on it (a shutdown signal handled inside the task, in a solo
        pool's main thread): that task's process exits after it, and the loop with it."""
        with self._lock:
            if self._running:
                return
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()
