"""Ingest tasks of one namespace: status, phase, progress, attempts and a bounded log."""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, or_, select, update
from sqlalchemy.orm import Session

from eagle_rag.db.records import TASK_STATUSES, TaskRecord, as_utc
from eagle_rag.db.repositories.base import NamespacedRepository, new_id, within_kbs
from eagle_rag.db.tables import DocumentRow, TaskRow, utcnow
from eagle_rag.errors import InvalidInputError, NotFoundError

LOG_LINES_KEPT = 200
LIVE_STATUSES = ("queued", "processing")  # the states a lease covers
STALE_SCAN_LIMIT = 1000
_RUNNING = TaskRow.status == "processing"  # an attempt runs (queued: nothing does yet)
ID_BATCH = 500  # ids per IN (...): well under every SQLite build's bound-parameter limit


@dataclass(frozen=True, slots=True)
class LeaseState:
    """A live task's lease as the scan for stranded tasks saw it (the take-over compares it)."""

    task_id: str
    status: str
    owner: str | None
    expires_at: datetime | None


def task_record(row: TaskRow) -> TaskRecord:
    return TaskRecord(
        id=row.id,
        namespace=row.plugin_namespace,
        document_id=row.document_id,
        kb_name=row.kb_name,
        status=row.status,
        phase=row.phase,
        progress_current=row.progress_current,
        progress_total=row.progress_total,
        attempts=row.attempts,
        error=row.error,
        log=tuple(row.log),
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
        lease_owner=row.lease_owner,
        lease_expires_at=as_utc(row.lease_expires_at) if row.lease_expires_at else None,
        max_attempts=row.max_attempts,
    )


def log_line(log: list[str], note: str) -> list[str]:
    """The task log with one time-stamped line appended, bounded to LOG_LINES_KEPT."""
    return [*log, f"{utcnow().isoformat(timespec='seconds')} {note}"][-LOG_LINES_KEPT:]


class TaskRepository(NamespacedRepository):
    """Task state as workers report it; readers poll or stream it."""

    def create(
        self,
        *,
        document_id: str,
        lease_owner: str | None = None,
        lease_until: datetime | None = None,
    ) -> TaskRecord:
        with self._db.session() as session:
            kb_name = session.scalar(
                select(DocumentRow.kb_name).where(
                    DocumentRow.plugin_namespace == self.namespace, DocumentRow.id == document_id
                )
            )
            if kb_name is None:
                raise NotFoundError("document not found", document_id=document_id)
            row = TaskRow(
                id=new_id(),
                plugin_namespace=self.namespace,
                document_id=document_id,
                kb_name=kb_name,
                status="queued",
                phase="queued",
                progress_current=0,
                progress_total=0,
                attempts=0,
                log=[],
                lease_owner=lease_owner,
                lease_expires_at=lease_until,
            )
            session.add(row)
            session.flush()
            return task_record(row)

    def get(self, task_id: str, *, within: Collection[str] | None = None) -> TaskRecord:
        """The task; one of a KB outside ``within`` (an API key's KBs; None: every KB) is not
        found, exactly as a missing one is."""
        with self._db.session() as session:
            return task_record(self._existing(session, task_id, within))

    def find(self, task_id: str) -> TaskRecord | None:
        """The task, or None when it is gone (deleted with its document)."""
        try:
            return self.get(task_id)
        except NotFoundError:
            return None

    def list(
        self,
        *,
        status: str | None = None,
        kb_name: str | None = None,
        limit: int = 100,
        offset: int = 0,
        kb_names: Collection[str] | None = None,
    ) -> list[TaskRecord]:
        """The newest tasks (after skipping ``offset``); ``kb_names`` (an API key's KBs)
        filters before the limit."""
        with self._db.session() as session:
            query = select(TaskRow).where(TaskRow.plugin_namespace == self.namespace)
            query = within_kbs(query, TaskRow.kb_name, kb_names)
            if status is not None:
                query = query.where(TaskRow.status == status)
            if kb_name is not None:
                query = query.where(TaskRow.kb_name == kb_name)
            query = query.order_by(TaskRow.created_at.desc(), TaskRow.id)
            query = query.offset(offset).limit(limit)
            return [task_record(r) for r in session.scalars(query)]

    def count_by_status(self) -> dict[str, int]:
        with self._db.session() as session:
            query = (
                select(TaskRow.status, func.count())
                .where(TaskRow.plugin_namespace == self.namespace)
                .group_by(TaskRow.status)
            )
            return {status: int(count) for status, count in session.execute(query)}

    def for_document(self, document_id: str) -> builtins.list[TaskRecord]:
        with self._db.session() as session:
            query = select(TaskRow).where(
                TaskRow.plugin_namespace == self.namespace, TaskRow.document_id == document_id
            )
            return [task_record(r) for r in session.scalars(query.order_by(TaskRow.created_at))]

    def progress(self, task_id: str, *, phase: str, current: int, total: int) -> None:
        """One UPDATE statement: workers call this for every batch, so it must stay cheap.

        Only a processing task takes progress: a late report of an attempt that was cancelled
        (or retried) must not paint "failed" or "queued" with a running phase. Such a report
        changes nothing; the attempt's cancel check stops it.
        """
        if current < 0 or total < 0:
            raise InvalidInputError("progress must not be negative")
        with self._db.session() as session:
            result = session.execute(
                update(TaskRow)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.id == task_id,
                    TaskRow.status == "processing",
                )
                .values(
                    phase=phase,
                    progress_current=current,
                    progress_total=total,
                    updated_at=utcnow(),
                )
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                self._existing(session, task_id)  # only a deleted task is an error (rare path)

    def complete(self, task_id: str, *, total: int, note: str) -> None:
        """Mark a task completed with full progress and a closing log line, in one transaction."""
        with self._db.session() as session:
            row = self._existing(session, task_id)
            row.status = row.phase = "completed"
            row.progress_current = row.progress_total = total
            row.error = None
            row.log = log_line(row.log, note)

    def finish(self, task_id: str, *, status: str, error: str | None = None) -> TaskRecord:
        if status not in TASK_STATUSES:
            raise InvalidInputError(f"unknown task status {status!r}")
        with self._db.session() as session:
            row = self._existing(session, task_id)
            row.status, row.error = status, error
            row.phase = status if status in ("completed", "failed") else row.phase
            session.flush()
            return task_record(row)

    def renew(self, owner: str, task_ids: Iterable[str], until: datetime) -> int:
        """Extend ``owner``'s lease on the live tasks it holds (one statement per batch).

        Only rows ``owner`` holds are renewed. A row without an owner (a broker's send lease, a
        cancelled task retried, a transient failure's retry falling due) or with an expired
        lease of another holder is not this holder's to take: a worker whose attempt was
        cancelled and retried would otherwise seize the retry, and the broker's delivery of it
        would be skipped as held. Returns how many were renewed.
        """
        renewed = 0
        with self._db.session() as session:
            for ids in _batches(task_ids):
                result = session.execute(
                    update(TaskRow)
                    .where(
                        TaskRow.plugin_namespace == self.namespace,
                        TaskRow.id.in_(ids),
                        TaskRow.status.in_(LIVE_STATUSES),
                        TaskRow.lease_owner == owner,
                    )
                    .values(lease_expires_at=until, updated_at=TaskRow.updated_at)
                    .execution_options(synchronize_session=False)
                )
                renewed += int(result.rowcount)  # type: ignore[attr-defined]
        return renewed

    def release(self, owner: str, task_ids: Iterable[str]) -> None:
        """End ``owner``'s leases now (a clean stop): the next start re-queues them at once."""
        with self._db.session() as session:
            for ids in _batches(task_ids):
                session.execute(
                    update(TaskRow)
                    .where(
                        TaskRow.plugin_namespace == self.namespace,
                        TaskRow.id.in_(ids),
                        TaskRow.lease_owner == owner,
                        TaskRow.status.in_(LIVE_STATUSES),
                    )
                    .values(lease_expires_at=utcnow(), updated_at=TaskRow.updated_at)
                    .execution_options(synchronize_session=False)
                )

    def hand_to_broker(self, task_id: str) -> bool:
        """A queued task the broker now holds: drop the send lease it was recorded with
        (no owner, an expiry), so recovery no longer re-sends it. A worker that claimed it
        meanwhile holds its own lease, which is left alone. Returns whether it changed."""
        with self._db.session() as session:
            result = session.execute(
                update(TaskRow)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.id == task_id,
                    TaskRow.status == "queued",
                    TaskRow.lease_owner.is_(None),
                )
                .values(lease_expires_at=None, updated_at=TaskRow.updated_at)
                .execution_options(synchronize_session=False)
            )
            return bool(getattr(result, "rowcount", 0))

    def lease_candidates(
        self, *, now: datetime, host_prefix: str, own: str, unheld_before: datetime | None = None
    ) -> builtins.list[LeaseState]:
        """Live tasks that may be stranded: leases that expired, and leases held by another
        process of this host (the caller checks whether that process still runs).

        A task without an expiry is held by a broker; given ``unheld_before``, such a queued
        task that no worker claimed and nothing changed since then shows up too (its message
        may be lost: a worker acknowledged it and failed before the claim).
        """
        leased = (TaskRow.lease_expires_at.is_not(None)) & or_(
            TaskRow.lease_expires_at < now,
            (TaskRow.lease_owner.startswith(host_prefix, autoescape=True))
            & (TaskRow.lease_owner != own),
        )
        if unheld_before is not None:
            leased = leased | (
                (TaskRow.status == "queued")
                & TaskRow.lease_owner.is_(None)
                & TaskRow.lease_expires_at.is_(None)
                & (TaskRow.updated_at < unheld_before)
            )
        with self._db.session() as session:
            query = (
                select(TaskRow.id, TaskRow.status, TaskRow.lease_owner, TaskRow.lease_expires_at)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.status.in_(LIVE_STATUSES),
                    leased,
                )
                .order_by(TaskRow.created_at)
                .limit(STALE_SCAN_LIMIT)
            )
            return [
                LeaseState(str(i), str(status), owner, as_utc(expiry) if expiry else None)
                for i, status, owner, expiry in session.execute(query)
            ]

    def unflushed(self) -> builtins.list[TaskRecord]:
        """Completed tasks whose vectors the store has not flushed since (durability.py)."""
        with self._db.session() as session:
            query = select(TaskRow).where(
                TaskRow.plugin_namespace == self.namespace,
                TaskRow.status == "completed",
                TaskRow.vectors_flushed.is_(False),
            )
            return [task_record(r) for r in session.scalars(query.order_by(TaskRow.updated_at))]

    def mark_flushed(self, *, before: datetime | None = None, task_ids: Iterable[str] = ()) -> int:
        """Record a flush: completed tasks last changed before ``before`` (or these ids)."""
        ids = sorted(set(task_ids))
        conditions = [
            TaskRow.plugin_namespace == self.namespace,
            TaskRow.status == "completed",
            TaskRow.vectors_flushed.is_(False),
        ]
        if before is not None:
            conditions.append(TaskRow.updated_at <= before)
        if ids:
            conditions.append(TaskRow.id.in_(ids))
        with self._db.session() as session:
            result = session.execute(
                update(TaskRow)
                .where(*conditions)
                .values(vectors_flushed=True, updated_at=TaskRow.updated_at)
                .execution_options(synchronize_session=False)
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def cancel(self, task_id: str, reason: str) -> bool:
        """Fail a live (queued or processing) task, and its document unless that completed, with
        ``reason``. Returns False, changing nothing, when the task is no longer live.

        A processing task keeps its attempt's lease: that attempt still runs until its next
        check, and then deletes what it wrote. Until it ends the lease (``end_stopped``), or
        the lease runs out because its worker died, a retry is refused: a new attempt's
        vectors would go with the old attempt's cleanup. A queued task's lease ends now.
        """
        now = utcnow()
        with self._db.session() as session:
            row = self._existing(session, task_id)
            changed = session.execute(
                update(TaskRow)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.id == task_id,
                    TaskRow.status.in_(LIVE_STATUSES),
                )
                .values(
                    status="failed",
                    phase="failed",
                    error=reason,
                    # SET reads the row as it was: the status before this update.
                    lease_owner=case((_RUNNING, TaskRow.lease_owner), else_=None),
                    lease_expires_at=case((_RUNNING, TaskRow.lease_expires_at), else_=None),
                    log=log_line(row.log, f"cancelled: {reason}"),
                    updated_at=now,
                )
                .execution_options(synchronize_session=False)
            )
            if changed.rowcount == 0:  # type: ignore[attr-defined]
                return False
            session.execute(
                update(DocumentRow)
                .where(
                    DocumentRow.plugin_namespace == self.namespace,
                    DocumentRow.id == row.document_id,
                    DocumentRow.status != "completed",
                )
                .values(status="failed", error=reason, updated_at=now)
                .execution_options(synchronize_session=False)
            )
        return True

    def abandoned_cleanups(self, *, now: datetime, host_prefix: str) -> builtins.list[TaskRecord]:
        """Cancelled tasks whose stopped attempt still holds the lease a cancel left it (to undo
        its writes) and may be gone: the lease expired, or its holder is a process of this
        host (the caller checks whether it still runs)."""
        with self._db.session() as session:
            query = (
                select(TaskRow)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.status == "failed",
                    TaskRow.lease_expires_at.is_not(None),
                    or_(
                        TaskRow.lease_expires_at < now,
                        TaskRow.lease_owner.startswith(host_prefix, autoescape=True),
                    ),
                )
                .order_by(TaskRow.updated_at)
                .limit(STALE_SCAN_LIMIT)
            )
            return [task_record(r) for r in session.scalars(query)]

    def take_cleanup(self, task: TaskRecord, *, owner: str, until: datetime) -> bool:
        """Take over the cleanup lease of ``task`` as it was read (abandoned_cleanups): a retry
        waits while it is held. False: the row changed meanwhile (a retry, the attempt's own
        end)."""
        with self._db.session() as session:
            result = session.execute(
                update(TaskRow)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.id == task.id,
                    TaskRow.status == "failed",
                    TaskRow.attempts == task.attempts,
                    TaskRow.lease_owner == task.lease_owner,
                    TaskRow.lease_expires_at == task.lease_expires_at,
                )
                .values(lease_owner=owner, lease_expires_at=until)
                .execution_options(synchronize_session=False)
            )
            return bool(getattr(result, "rowcount", 0))

    def end_stopped(self, task_id: str, *, owner: str, attempt: int, note: str) -> None:
        """The attempt ``attempt`` of ``owner`` that a cancel stopped has undone its writes:
        log ``note`` and end the lease the cancel left it (only while the row is still that
        attempt's, so a newer attempt's lease is never touched)."""
        with self._db.session() as session:
            row = self._existing(session, task_id)
            row.log = log_line(row.log, note)
            session.flush()
            session.execute(
                update(TaskRow)
                .where(
                    TaskRow.plugin_namespace == self.namespace,
                    TaskRow.id == task_id,
                    TaskRow.status == "failed",
                    TaskRow.lease_owner == owner,
                    TaskRow.attempts == attempt,
                )
                .values(lease_owner=None, lease_expires_at=None, updated_at=utcnow())
                .execution_options(synchronize_session=False)
            )

    def append_log(self, task_id: str, line: str) -> None:
        with self._db.session() as session:
            row = self._existing(session, task_id)
            row.log = log_line(row.log, line)

    def _existing(
        self, session: Session, task_id: str, within: Collection[str] | None = None
    ) -> TaskRow:
        query = select(TaskRow).where(
            TaskRow.plugin_namespace == self.namespace, TaskRow.id == task_id
        )
        row = session.scalars(within_kbs(query, TaskRow.kb_name, within)).first()
        if row is None:
            raise NotFoundError("task not found", job_id=task_id, namespace=self.namespace)
        return row


def _batches(task_ids: Iterable[str]) -> Iterator[list[str]]:
    ids = sorted(set(task_ids))
    for start in range(0, len(ids), ID_BATCH):
        yield ids[start : start + ID_BATCH]
