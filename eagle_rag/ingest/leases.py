"""Task leases: who holds a live task, the heartbeat that keeps holding it, and recovery.

Every queued or processing task row names its holder (``lease_owner``) and an expiry. A holder
renews its leases every third of ``ingest.lease_s``; a task whose lease expired, or whose holder
is a process of this host that no longer runs (a ``kill -9``, an OOM kill), is stranded and the
next recovery pass re-queues it. A broker's task (Celery) is recorded with a *send lease* (no
owner, an expiry): once the broker took the message the expiry is dropped and the broker holds
it; a send lease that expired means the message never reached the broker (the API died in
between, or the broker was down), and recovery sends it again (celery_app.py).

Owner ids are ``host:pid:random``: the host and pid let a restarted process on the same machine
see at once that the previous one is gone, without waiting out its lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from eagle_rag.db.records import TaskRecord
from eagle_rag.db.repositories.ingest_runs import IngestRunRepository
from eagle_rag.db.repositories.tasks import LIVE_STATUSES, TaskRepository
from eagle_rag.db.tables import utcnow
from eagle_rag.errors import BackendUnavailableError

logger = logging.getLogger(__name__)
# As long as the broker's visibility timeout (celery_app.py): an unacknowledged message comes
# back after that long by itself; one a worker acknowledged and then lost never does. A task
# still waiting in a long backlog is sent twice at worst, and its second delivery is skipped.
UNHELD_RESEND_S = 15 * 60


def process_owner() -> str:
    """A lease owner id for this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ProcessOwner:
    """This process's lease owner id, made anew in a forked child. A prefork pool's children
    inherited the id their parent made at import: they all held leases as one owner, so a
    child killed mid-task looked alive (its owner named the parent) and one child could take
    a sibling's task for its own."""

    def __init__(self) -> None:
        self._pid: int | None = None
        self._owner = ""

    def __call__(self) -> str:
        if self._pid != os.getpid():
            self._pid, self._owner = os.getpid(), process_owner()
        return self._owner


def host_prefix() -> str:
    return f"{socket.gethostname()}:"


def owner_gone(owner: str | None) -> bool:
    """Whether ``owner`` names a process of this host that no longer runs (zombies count)."""
    if not owner or not owner.startswith(host_prefix()):
        return False
    try:
        pid = int(owner[len(host_prefix()) :].split(":", 1)[0])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: alive
        return False
    return _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]


def stranded(task: TaskRecord, now: datetime | None = None) -> bool:
    """A live task nobody will run: its lease expired, or its holder's process is gone.

    A broker's queued task (no expiry) counts as stranded for a retry by hand: the broker may
    have lost it, and a duplicate delivery is harmless (the claim skips it).
    """
    if task.status not in LIVE_STATUSES:
        return False
    if task.lease_expires_at is None:
        return True
    return task.lease_expires_at < (now or utcnow()) or owner_gone(task.lease_owner)


def transient(exc: BaseException) -> bool:
    """Whether a failure may pass by itself (a backend down, a timeout), anywhere in its chain:
    such an attempt is tried again, later; a bad file or a refusing plugin fails at once."""
    from sqlalchemy.exc import OperationalError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(
            current, BackendUnavailableError | TimeoutError | ConnectionError | OperationalError
        ):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@dataclass(frozen=True, slots=True)
class Leases:
    """The lease operations of one holder (a process's queue or worker)."""

    tasks: TaskRepository
    runs: IngestRunRepository
    owner: str
    lease_s: float
    # A broker's task (no owner, no expiry) queued and unchanged this long is sent again: its
    # message may be lost. None: never (a holder that takes no broker tasks' place).
    unheld_s: float | None = UNHELD_RESEND_S

    @property
    def interval_s(self) -> float:
        return self.lease_s / 3

    def until(self) -> datetime:
        return utcnow() + timedelta(seconds=self.lease_s)

    def renew(self, task_ids: Iterable[str]) -> int:
        return self.tasks.renew(self.owner, task_ids, self.until())

    def release(self, task_ids: Iterable[str]) -> None:
        self.tasks.release(self.owner, task_ids)

    def recover(self, *, hold: bool) -> list[str]:
        """Re-queue the stranded tasks; returns their ids, for the caller to submit.

        ``hold``: take them under this holder's lease (an in-process queue that will run them);
        otherwise give them a fresh send lease (no owner), which the caller's send to the
        broker drops, and which brings them back here if that send fails too.
        """
        now = utcnow()
        unheld_before = None if self.unheld_s is None else now - timedelta(seconds=self.unheld_s)
        recovered, why_counts = [], dict.fromkeys(_WHY, 0)
        for state in self.tasks.lease_candidates(
            now=now, host_prefix=host_prefix(), own=self.owner, unheld_before=unheld_before
        ):
            why = _why_stranded(state.owner, state.expires_at, now)
            if why is None:
                continue
            taken = self.runs.requeue(
                state.task_id,
                note=f"re-queued: {why} (was {state.status}, held by {state.owner or 'nobody'})",
                lease_owner=self.owner if hold else None,
                lease_until=self.until(),
                expect=(state.owner, state.expires_at),
                live_only=True,
            )
            if taken:
                recovered.append(state.task_id)
                why_counts[why] += 1
        if recovered:
            # Which of these tells an operator a clean stop (leases handed back: expired) from
            # a crash (kill -9, OOM: the process is gone) and from a lost broker message.
            reasons = ", ".join(f"{n}: {why}" for why, n in why_counts.items() if n)
            logger.warning("re-queued %d stranded ingest task(s) (%s)", len(recovered), reasons)
        return recovered


_EXPIRED = "its lease expired"
_GONE = "its worker's process is gone"
_UNHELD = "no worker claimed it in time (its broker message may be lost)"
_WHY = (_EXPIRED, _GONE, _UNHELD)


def _why_stranded(owner: str | None, expires_at: datetime | None, now: datetime) -> str | None:
    """Why recovery takes a candidate over (lease_candidates), or None: it is held."""
    if expires_at is None:  # no owner, no expiry: the scan found it unclaimed for too long
        return _UNHELD if owner is None else None
    if expires_at < now:
        return _EXPIRED
    return _GONE if owner_gone(owner) else None


def leases_for(repositories: Any, lease_s: float) -> Leases:
    """This process's leases over the app's task and ingest-run repositories."""
    # No broker's task is this queue's to send again: its own tasks always have an owner.
    return Leases(
        repositories.tasks, repositories.ingest_runs, process_owner(), lease_s, unheld_s=None
    )


@contextlib.asynccontextmanager
async def heartbeat(leases: Leases, task_id: str) -> AsyncIterator[None]:
    """Renew the lease on ``task_id`` while the block runs (a Celery worker's task)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(leases.interval_s)
            try:
                await asyncio.to_thread(leases.renew, [task_id])
            except Exception:  # the next beat tries again; the lease outlives a few misses
                logger.exception("could not renew the lease on task %s", task_id)

    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
