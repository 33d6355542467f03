"""Task leases on SQLite and PostgreSQL: claims, renewals, take-overs, the attempt limit, and the
migration that gives tasks of an older schema an expired lease."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text, update

from eagle_rag.db.database import MIGRATIONS, Database
from eagle_rag.db.repositories import (
    DocumentRepository,
    IngestRunRepository,
    KnowledgeBaseRepository,
    TaskRepository,
)
from eagle_rag.db.repositories.ingest_runs import AttemptSupersededError
from eagle_rag.db.tables import DocumentRow, TaskRow, utcnow
from eagle_rag.errors import NotFoundError
from eagle_rag.ingest.cancel import CANCELLED, SUPERSEDED, attempt_status
from eagle_rag.ingest.leases import (
    Leases,
    ProcessOwner,
    host_prefix,
    owner_gone,
    process_owner,
)

STAMP = "2026-01-01 00:00:00.000000"  # as SQLAlchemy writes SQLite timestamps


def _accept(runs: IngestRunRepository, **kw: Any) -> Any:
    accepted = runs.accept(
        document_id=uuid.uuid4().hex,
        kb_name="docs",
        filename="a.txt",
        mime_type="text/plain",
        sha256=uuid.uuid4().hex * 2,
        size=3,
        object_key="core/docs/x/a.txt",
        **kw,
    )
    assert accepted.task is not None
    return accepted


def _dead_owner() -> str:
    """The owner id of a process of this host that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{host_prefix()}{child.pid}:deadbeef"


@pytest.fixture
def runs(db: Database, ns: str) -> IngestRunRepository:
    KnowledgeBaseRepository(db, ns).create("docs")
    return IngestRunRepository(db, ns)


def test_a_live_lease_keeps_other_claimers_out_until_it_expires(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    task_id = _accept(runs).task.id
    first = runs.start(task_id, owner="a", lease_s=0.3, max_attempts=3)
    assert (first.outcome, first.attempts) == ("claimed", 1)
    held = runs.start(task_id, owner="b", lease_s=30, max_attempts=3)
    assert (held.outcome, held.reason) == ("skipped", "lease held by a")
    assert TaskRepository(db, ns).get(task_id).lease_owner == "a"
    time.sleep(0.4)
    second = runs.start(task_id, owner="b", lease_s=30, max_attempts=3)
    assert (second.outcome, second.attempts) == ("claimed", 2)
    task = TaskRepository(db, ns).get(task_id)
    assert task.lease_owner == "b" and task.lease_expires_at is not None
    assert task.lease_expires_at > utcnow() + timedelta(seconds=20)


def test_renew_extends_only_the_holders_own_leases(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    mine, theirs = _accept(runs).task.id, _accept(runs).task.id
    runs.start(mine, owner="a", lease_s=1, max_attempts=3)
    runs.start(theirs, owner="b", lease_s=30, max_attempts=3)
    until = utcnow() + timedelta(seconds=60)
    assert tasks.renew("a", [mine, theirs], until) == 1
    assert tasks.get(mine).lease_expires_at == until
    assert tasks.get(theirs).lease_owner == "b"


def test_completion_and_failure_end_the_lease(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    done, bad = _accept(runs).task.id, _accept(runs).task.id
    attempt = runs.start(done, owner="a", lease_s=30, max_attempts=3)
    runs.complete(
        done,
        attempt.document,
        chunks=1,
        collections=["eagle_text"],
        kb_collections=[],
        structure={"pipeline": "knowhere"},
        pages=None,
        pipeline="knowhere",
        mime_type="text/plain",
        note="completed",
    )
    failing = runs.start(bad, owner="a", lease_s=30, max_attempts=3)
    runs.fail(bad, failing.document_id, "the file is encrypted")
    for task_id, status in ((done, "completed"), (bad, "failed")):
        task = tasks.get(task_id)
        assert (task.status, task.lease_owner, task.lease_expires_at) == (status, None, None)
    document = DocumentRepository(db, ns).get(failing.document_id)
    assert (document.status, document.error) == ("failed", "the file is encrypted")
    assert tasks.get(bad).log[-1].endswith("failed: the file is encrypted")
    # A duplicate delivery of a finished task is skipped and counts no attempt.
    assert runs.start(done, owner="b", lease_s=30, max_attempts=3).outcome == "skipped"
    assert tasks.get(done).attempts == 1


def test_a_task_out_of_attempts_fails_with_its_reason_and_a_retry_grants_more(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    task_id = _accept(runs).task.id
    for n in (1, 2):  # each attempt's worker is lost: the lease runs out
        assert runs.start(task_id, owner=f"w{n}", lease_s=0.01, max_attempts=2).attempts == n
        time.sleep(0.05)
    exhausted = runs.start(task_id, owner="w3", lease_s=30, max_attempts=2)
    assert exhausted.outcome == "exhausted"
    task = tasks.get(task_id)
    assert task.status == "failed" and task.attempts == 2
    assert task.error is not None and task.error.startswith("gave up after 2 attempts")
    assert DocumentRepository(db, ns).get(task.document_id).status == "failed"
    assert runs.requeue(
        task_id, note="retried by hand", lease_owner=None, lease_until=None, grant_attempts=2
    )
    again = runs.start(task_id, owner="w4", lease_s=30, max_attempts=2)
    assert (again.outcome, again.attempts, again.max_attempts) == ("claimed", 3, 4)


def test_recovery_takes_over_expired_and_dead_owners_leases_once(
    db: Database, ns: str, runs: IngestRunRepository, caplog: pytest.LogCaptureFixture
) -> None:
    tasks = TaskRepository(db, ns)
    now = utcnow()
    dead = _dead_owner()
    assert owner_gone(dead) and not owner_gone(process_owner())
    expired = _accept(runs, lease_owner="elsewhere:1:x", lease_until=now - timedelta(seconds=1))
    orphaned = _accept(runs, lease_owner=dead, lease_until=now + timedelta(hours=1))
    running = _accept(runs)
    runs.start(running.task.id, owner=dead, lease_s=3600, max_attempts=3)
    live = _accept(runs, lease_owner="elsewhere:2:y", lease_until=now + timedelta(hours=1))
    brokered = _accept(runs)  # a broker's task: no lease until a worker claims it
    me = Leases(tasks, runs, process_owner(), lease_s=30)
    recovered = me.recover(hold=True)
    assert sorted(recovered) == sorted([expired.task.id, orphaned.task.id, running.task.id])
    # The reasons tell a clean stop (leases handed back, so expired) from a crash.
    assert (
        "re-queued 3 stranded ingest task(s) (1: its lease expired, 2: its worker's process is "
        "gone)"
    ) in caplog.messages
    for task_id in recovered:
        task = tasks.get(task_id)
        assert (task.status, task.lease_owner) == ("queued", me.owner)
        assert "re-queued" in task.log[-1]
    assert DocumentRepository(db, ns).get(running.document.id).status == "pending"
    assert tasks.get(live.task.id).lease_owner == "elsewhere:2:y"
    assert tasks.get(brokered.task.id).lease_owner is None
    other = Leases(tasks, runs, process_owner(), lease_s=30)
    assert other.recover(hold=False) == []  # me holds them now, and me is alive


def test_a_forked_child_holds_leases_as_an_owner_of_its_own() -> None:
    """A prefork pool's children inherited the owner their parent made at import: a child
    killed mid-task looked alive (its owner named the parent), and siblings were one owner."""
    owner = ProcessOwner()
    parent = owner()
    assert owner() == parent
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its owner and leave at once
        os.write(write, owner().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 200).decode()
    os.close(read)
    os.close(write)
    assert child != parent and child.split(":")[1] == str(pid)
    assert owner_gone(child) and not owner_gone(parent)  # its leases are recoverable at once


def test_a_clean_release_makes_the_tasks_recoverable_at_once(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    me = Leases(tasks, runs, "elsewhere:3:z", lease_s=30)
    task_id = _accept(runs, lease_owner=me.owner, lease_until=me.until()).task.id
    me.release([task_id])
    time.sleep(0.01)
    successor = Leases(tasks, runs, process_owner(), lease_s=30)
    assert successor.recover(hold=False) == [task_id]
    task = tasks.get(task_id)
    # A send lease (no owner, an expiry) until the broker takes the message: hand_to_broker.
    assert task.lease_owner is None and task.lease_expires_at is not None
    assert tasks.hand_to_broker(task_id)
    assert (tasks.get(task_id).lease_owner, tasks.get(task_id).lease_expires_at) == (None, None)


def test_restricted_pages_are_filtered_before_limit_and_offset(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    kbs = KnowledgeBaseRepository(db, ns)
    for name in ("a-kb", "b-kb", "c-kb", "d-kb"):
        kbs.create(name)
    allowed = {"b-kb", "d-kb"}
    assert [kb.name for kb in kbs.list(names=allowed, limit=2)] == ["b-kb", "d-kb"]
    assert [kb.name for kb in kbs.list(names=allowed, limit=1, offset=1)] == ["d-kb"]
    for _ in range(3):
        _accept(runs)  # in "docs", which the key may not see
    mine = _accept(runs)
    documents = DocumentRepository(db, ns)
    assert documents.list(kb_names={"docs"}, limit=1, offset=3)[0].id == mine.document.id
    assert documents.list(kb_names={"b-kb"}, limit=2) == []
    assert TaskRepository(db, ns).list(kb_names={"b-kb"}, limit=1) == []
    assert len(TaskRepository(db, ns).list(kb_names={"docs"}, limit=2)) == 2


def test_migration_0002_gives_stranded_tasks_of_0001_an_expired_lease(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'old.db'}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    with database.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO knowledge_bases VALUES ('k', 'core', 'docs', 'eagle', '', '{}', "
                "'{}', '[]', '2026-01-01 00:00:00.000000', '2026-01-01 00:00:00.000000')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO documents (id, plugin_namespace, kb_name, filename, mime_type, "
                "sha256, size, status, structure, collections_used, extra, chunk_count, "
                "created_at, updated_at) VALUES ('d', 'core', 'docs', 'a.txt', 'text/plain', "
                "'s', 1, 'processing', '{}', '[]', '{}', 0, '2026-01-01 00:00:00.000000', "
                "'2026-01-01 00:00:00.000000')"
            )
        )
        for task_id, status in (("t1", "processing"), ("t2", "completed")):
            connection.execute(
                text(
                    "INSERT INTO tasks (id, plugin_namespace, document_id, kb_name, status, "
                    "phase, progress_current, progress_total, attempts, log, created_at, "
                    f"updated_at) VALUES ('{task_id}', 'core', 'd', 'docs', '{status}', "
                    f"'{status}', 0, 0, 1, '[]', '{STAMP}', '{STAMP}')"
                )
            )
    assert database.migrate() == "0002"
    tasks = TaskRepository(database, "core")
    assert tasks.get("t1").lease_expires_at is not None
    assert tasks.get("t2").lease_expires_at is None
    leases = Leases(tasks, IngestRunRepository(database, "core"), process_owner(), 30)
    assert leases.recover(hold=True) == ["t1"]
    database.dispose()


def test_renewing_thousands_of_leases_goes_in_batches(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    lease = {"lease_owner": "a", "lease_until": utcnow() + timedelta(seconds=30)}
    first, last = _accept(runs, **lease).task.id, _accept(runs, **lease).task.id
    held = [first, *(uuid.uuid4().hex for _ in range(1200)), last]  # more than one IN (...)
    assert tasks.renew("a", held, utcnow() + timedelta(minutes=5)) == 2
    tasks.release("a", held)
    assert all(tasks.get(t).lease_expires_at <= utcnow() for t in (first, last))  # type: ignore[operator]


def _complete(runs: IngestRunRepository, task_id: str, document: Any, **kw: Any) -> list[str]:
    return runs.complete(
        task_id,
        document,
        chunks=1,
        collections=["eagle_text"],
        kb_collections=[],
        structure={"pipeline": "knowhere"},
        pages=None,
        pipeline="knowhere",
        mime_type="text/plain",
        note="completed",
        **kw,
    )


def test_a_cancel_before_completion_wins_and_late_progress_changes_nothing(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    task_id = _accept(runs).task.id
    attempt = runs.start(task_id, owner="a", lease_s=30, max_attempts=3)
    assert tasks.cancel(task_id, CANCELLED)  # the API answered 202: failed, nothing kept
    tasks.progress(task_id, phase="embed", current=3, total=5)  # a report already on its way
    for held in ({"owner": "a", "attempt": 1}, {}):
        with pytest.raises(AttemptSupersededError):
            _complete(runs, task_id, attempt.document, **held)
    task = tasks.get(task_id)
    assert (task.status, task.phase, task.error, task.progress_current) == (
        "failed",
        "failed",
        CANCELLED,
        0,
    )
    document = DocumentRepository(db, ns).get(attempt.document_id)
    assert (document.status, document.error) == ("failed", CANCELLED)
    with pytest.raises(NotFoundError):
        tasks.progress("no-such-task", phase="embed", current=1, total=1)


def test_a_retry_right_after_a_cancel_is_not_taken_over_by_the_old_attempt(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    send_lease = utcnow() + timedelta(seconds=30)
    task_id = _accept(runs, lease_owner=None, lease_until=send_lease).task.id
    assert tasks.hand_to_broker(task_id)
    old = runs.start(task_id, owner="old", lease_s=30, max_attempts=3)
    assert tasks.cancel(task_id, CANCELLED)
    # The running attempt keeps its lease until it has undone its writes (a retry waits).
    assert tasks.get(task_id).lease_owner == "old"
    tasks.end_stopped(task_id, owner="new", attempt=old.attempts, note="not this owner's")
    tasks.end_stopped(task_id, owner="old", attempt=old.attempts + 1, note="nor this attempt's")
    assert tasks.get(task_id).lease_owner == "old"
    tasks.end_stopped(task_id, owner="old", attempt=old.attempts, note="attempt 1 stopped")
    stopped = tasks.get(task_id)
    assert (stopped.status, stopped.lease_owner, stopped.lease_expires_at) == ("failed", None, None)
    assert stopped.log[-1].endswith("attempt 1 stopped")
    # A retry by hand for Celery: queued again under a fresh send lease (no owner).
    assert runs.requeue(
        task_id,
        note="retried by hand (was failed)",
        lease_owner=None,
        lease_until=utcnow() + timedelta(seconds=30),
        expect=(None, None),
        grant_attempts=3,
    )
    assert attempt_status(tasks.get(task_id), "old", old.attempts) != "processing"
    # The old worker's heartbeat beats on: it must not seize the retry's row.
    assert tasks.renew("old", [task_id], utcnow() + timedelta(seconds=60)) == 0
    assert tasks.get(task_id).lease_owner is None
    assert tasks.hand_to_broker(task_id)  # the send lease is dropped as usual
    new = runs.start(task_id, owner="new", lease_s=30, max_attempts=3)
    assert (new.outcome, new.attempts) == ("claimed", 2)
    assert attempt_status(tasks.get(task_id), "old", old.attempts) == SUPERSEDED
    with pytest.raises(AttemptSupersededError):  # nor complete it with its own result
        _complete(runs, task_id, old.document, owner="old", attempt=old.attempts)
    # The same owner (an in-process queue) retrying: the attempt number tells them apart.
    assert attempt_status(tasks.get(task_id), "new", 1) == SUPERSEDED
    assert _complete(runs, task_id, new.document, owner="new", attempt=2) == []
    assert tasks.get(task_id).status == "completed"


def test_recovery_sends_again_a_broker_task_nobody_claimed_for_too_long(
    db: Database, ns: str, runs: IngestRunRepository, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker that acknowledged a message and failed before its claim (the database was
    down) lost it: the task stayed queued, with no lease, and no recovery round looked at it."""
    tasks = TaskRepository(db, ns)
    lost = _accept(runs).task.id  # handed to the broker: no owner, no expiry
    fresh = _accept(runs).task.id
    held = _accept(runs).task.id
    runs.start(held, owner="elsewhere:4:w", lease_s=3600, max_attempts=3)
    done = _accept(runs).task.id
    runs.start(done, owner="elsewhere:5:v", lease_s=3600, max_attempts=3)
    runs.fail(done, None, "a bad file")  # finished: no owner, no expiry either
    with db.session() as session:  # the lost one and the finished one waited an hour
        session.execute(
            update(TaskRow)
            .where(TaskRow.id.in_([lost, done]))
            .values(updated_at=utcnow() - timedelta(hours=1))
        )
    me = Leases(tasks, runs, process_owner(), lease_s=30, unheld_s=600)
    assert me.recover(hold=False) == [lost]
    assert "no worker claimed it in time" in caplog.messages[-1]
    task = tasks.get(lost)
    assert (task.status, task.attempts, task.lease_owner) == ("queued", 0, None)
    assert task.lease_expires_at is not None  # a send lease, until the broker takes it again
    assert tasks.hand_to_broker(lost)
    assert me.recover(hold=False) == []  # sent just now: not again until it waits again
    assert tasks.get(held).lease_owner == "elsewhere:4:w"
    assert (tasks.get(fresh).lease_expires_at, tasks.get(done).status) == (None, "failed")


def test_replaced_versions_are_older_completed_uploads_of_the_same_name(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    """What a crash between a re-upload's completion and its removal of the older version
    leaves: both completed. Only the older one is reported; an upload still running replaces
    nothing yet, and another name is another document."""
    documents = DocumentRepository(db, ns)
    old, new, _still_pending = (_accept(runs).document.id for _ in range(3))
    other = _accept(runs).document.id
    for document_id in (old, new, other):
        documents.set_fields(document_id, status="completed")
    with db.session() as session:
        session.execute(update(DocumentRow).where(DocumentRow.id == other).values(filename="b.txt"))
    assert runs.replaced_versions() == [old]


def test_a_cancelled_attempt_s_cleanup_is_taken_over_only_once_its_holder_is_gone(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    dead, live = _accept(runs).task.id, _accept(runs).task.id
    runs.start(dead, owner=_dead_owner(), lease_s=3600, max_attempts=3)
    runs.start(live, owner=process_owner(), lease_s=3600, max_attempts=3)
    for task_id in (dead, live):
        assert tasks.cancel(task_id, CANCELLED)  # the attempt keeps its lease to clean up
    found = {t.id: t for t in tasks.abandoned_cleanups(now=utcnow(), host_prefix=host_prefix())}
    assert set(found) == {dead, live}  # the caller checks whether the holder still runs
    assert owner_gone(found[dead].lease_owner) and not owner_gone(found[live].lease_owner)
    until = utcnow() + timedelta(seconds=30)
    assert tasks.take_cleanup(found[dead], owner="cleaner", until=until)
    assert not tasks.take_cleanup(found[dead], owner="another", until=until)  # taken
    tasks.end_stopped(dead, owner="cleaner", attempt=1, note="undone")
    task = tasks.get(dead)
    assert (task.status, task.lease_owner, task.lease_expires_at) == ("failed", None, None)
