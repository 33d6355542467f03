"""Cancelling an ingest task: the request is written on the task row, the worker reads it.

A cancel fails a live (queued or processing) task and its unfinished document at once, with
the reason. The worker running it reads its task's status at each progress report (every page
of a scan, every embedding batch; at most once per interval) and stops at the first one after
the request: the pipeline then deletes what the attempt wrote, as after any failure. The row is
the signal, so it works across processes (a Celery worker reads the same row). A task that
finishes before its worker looks again stays completed; the request then reports a conflict.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from eagle_rag.db.records import TaskRecord
from eagle_rag.db.repositories.tasks import LIVE_STATUSES, TaskRepository
from eagle_rag.db.tables import utcnow
from eagle_rag.errors import ConflictError, EagleError, NotFoundError

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)
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


def _undo(app: Runtime, task: TaskRecord, owner: str) -> None:
    from eagle_rag.ingest.pixelrag.visuals import visuals_prefix

    document = app.repositories.documents.find(task.document_id)
    if document is not None and document.status != "completed":
        app.vectors.delete_documents([document.id])
        app.objects.delete_prefix(visuals_prefix(app.namespace, document.kb_name, document.id))
    note = f"attempt {task.attempts} stopped with its worker; its writes were undone"
    app.repositories.tasks.end_stopped(task.id, owner=owner, attempt=task.attempts, note=note)


# The undo's lease, in leases: held well past the deletes, ended as soon as they are done.
UNDO_LEASES = 10


def undo_abandoned(app: Runtime, owner: str, lease_s: float) -> list[str]:
    """Finish the undo of cancelled attempts whose worker died before it (``kill -9`` right
    after the cancel): their vectors and pictures stayed, as ``failed_with_vectors``, until
    ``doctor --consistency --repair``. A stopped attempt keeps its lease until it has undone
    its writes; one whose lease expired, or whose process is gone, never will. The cleanup is
    taken over under ``owner``'s lease first (a retry waits while it is held), then the rows
    go and the lease ends. Returns the task ids."""
    from eagle_rag.ingest.leases import host_prefix, owner_gone

    repos, now, done = app.repositories, utcnow(), []
    for task in repos.tasks.abandoned_cleanups(now=now, host_prefix=host_prefix()):
        expiry = task.lease_expires_at
        if expiry is not None and expiry >= now and not owner_gone(task.lease_owner):
            continue  # the stopped attempt runs and cleans up itself
        # Held well past the deletes (slow stores, many pictures): while it is held a retry
        # waits, and a retry's new writes must not be deleted by this undo. It ends at once.
        until = utcnow() + timedelta(seconds=UNDO_LEASES * lease_s)
        if not repos.tasks.take_cleanup(task, owner=owner, until=until):
            continue
        try:
            _undo(app, task, owner)
        except NotFoundError:  # deleted meanwhile
            continue
        except Exception:  # the lease runs out and a later sweep tries again; the others go now
            logger.exception("could not undo the writes of task %s's stopped attempt", task.id)
            continue
        done.append(task.id)
    if done:
        logger.warning("undid the writes of %d cancelled attempt(s) whose worker died", len(done))
    return done
