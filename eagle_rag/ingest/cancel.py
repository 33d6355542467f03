"""Cancelling an ingest task: the request is written on the task row, the worker reads it.

A cancel fails a live (queued or processing) task and its unfinished document at once, with
the reason. The worker running it reads its task's status at each progress report (every page
of a scan, every embedding batch; at most once per interval) and stops at the first one after
the request: the pipeline then deletes what the attempt wrote, as after any failure. The row is
the signal, so it works across processes (a Celery worker reads the same row). A task that
finishes before its worker looks again stays completed; the request then reports a conflict.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from eagle_rag.db.records import TaskRecord
from eagle_rag.db.repositories.tasks import LIVE_STATUSES, TaskRepository
from eagle_rag.errors import ConflictError, EagleError

CANCELLED = "cancelled by request"


class IngestCancelledError(EagleError):
    """The task was cancelled while it ran (never transient: it is not tried again)."""

    code = "cancelled"


def cancel_task(tasks: TaskRepository, task_id: str) -> TaskRecord:
    """Cancel a queued or processing task; a finished one is a conflict."""
    task = tasks.get(task_id)
    if task.status not in LIVE_STATUSES or not tasks.cancel(task_id, CANCELLED):
        current = tasks.get(task_id).status
        raise ConflictError(
            f"the task is {current}; there is nothing to cancel", job_id=task_id, status=current
        )
    return tasks.get(task_id)


class CancelWatch:
    """Raises IngestCancelledError once the task's row says it was cancelled.

    ``read_status`` reads the task's status; it is called at most once per ``interval_s`` (every
    time when 0), the first time one interval after the start: a page-by-page caller costs one
    small read per interval, and a document done within the first interval costs none.
    """

    def __init__(
        self,
        read_status: Callable[[], str],
        interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read_status
        self._interval = interval_s
        self._clock = clock
        self._last = clock()
        self._cancelled = False  # once seen, every later check raises too

    def __call__(self) -> None:
        now = self._clock()
        if not self._cancelled and self._interval and now - self._last < self._interval:
            return
        self._last = now
        # "failed" is what cancel_task wrote; the task of a running attempt is "processing".
        self._cancelled = self._cancelled or self._read() == "failed"
        if self._cancelled:
            raise IngestCancelledError(f"the ingest was {CANCELLED}")
