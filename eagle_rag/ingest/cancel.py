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


SUPERSEDED = "superseded"  # what attempt_status says of a task this attempt no longer holds


def attempt_status(task: TaskRecord, owner: str, attempts: int) -> str:
    """The task's status as one attempt sees it: its status while this attempt (``owner``'s,
    counted ``attempts``) still holds it, else SUPERSEDED. A cancel followed at once by a retry
    makes the task queued or processing again; only the owner and attempt number tell the old
    attempt that the row is no longer its own."""
    if task.status != "processing":  # failed (a cancel ends the lease too), queued, completed
        return task.status
    if task.lease_owner != owner or task.attempts != attempts:
        return SUPERSEDED
    return task.status


def stopped_by_cancel(exc: BaseException) -> bool:
    """Whether ``exc`` is, or wraps, IngestCancelledError: a hook's failure wraps the one its
    page callback raised (a long scan is stopped inside PARSE_DOCUMENT)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, IngestCancelledError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class CancelWatch:
    """Raises IngestCancelledError once the task's row says this attempt must stop.

    ``read_status`` reads the task's status (see ``attempt_status``); anything but
    ``processing`` stops the attempt: failed (cancelled), queued (retried or re-queued by
    recovery), or superseded (claimed by another attempt). It is called at most once per
    ``interval_s`` (every time when 0), the first time one interval after the start: a
    page-by-page caller costs one small read per interval, and a document done within the first
    interval costs none (its completion is conditional on the task, ingest_runs.complete).
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
        self._stopped: str | None = None  # once seen, every later check raises too, unread

    def __call__(self) -> None:
        if self._stopped is not None:
            raise IngestCancelledError(self._stopped)
        now = self._clock()
        if self._interval and now - self._last < self._interval:
            return
        self._last = now
        # A running attempt's task is "processing"; "failed" is what cancel_task wrote, and any
        # other state means the row went on without this attempt (a retry after a cancel).
        status = self._read()
        if status != "processing":
            why = CANCELLED if status == "failed" else f"superseded (the task is {status})"
            self._stopped = f"the ingest was {why}"
            raise IngestCancelledError(self._stopped)
