"""The in-process queue's durable lifecycle on the embedded default: start-up recovery of what a
dead process left, transient failures retried, the success step's failure undone, the limit."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import text

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.db.repositories import IngestRunRepository
from eagle_rag.db.tables import utcnow
from eagle_rag.errors import BackendUnavailableError, ConflictError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.leases import host_prefix
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import UpsertBatch
from eagle_rag.settings import Settings, load_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")
TEXT = b"# Lifecycle\n\nThe quokka smiles at the lease holder.\n"


def _settings(data: Path) -> Settings:
    return load_settings(
        {"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"ingest": {"lease_s": 1.5, "retry_backoff_s": 0, "max_attempts": 2}},
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lifecycle")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(data: Path) -> AsyncIterator[EagleApp]:
    application = await bootstrap(_settings(data))
    yield application
    await application.stop()


@pytest.fixture
def kb(app: EagleApp) -> str:
    name = f"kb-{uuid.uuid4().hex[:8]}"
    app.repositories.knowledge_bases.create(name)
    return name


def _dead_owner() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{host_prefix()}{child.pid}:0badc0de"


async def _settled(app: EagleApp, job_id: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        task = app.repositories.tasks.get(job_id)
        if task.status in ("completed", "failed"):
            return task
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {job_id} did not settle: {app.repositories.tasks.get(job_id)}")


def _vectors(app: EagleApp, document_id: str) -> int:
    return int(app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document_id)))


def _submit(app: EagleApp, kb: str, data: bytes = TEXT, name: str = "a.md") -> Any:
    return app.ingest.submit_file(kb_name=kb, filename=name, stream=io.BytesIO(data))


async def test_tasks_a_dead_process_left_run_when_the_queue_starts(data: Path) -> None:
    """What `kill -9` leaves: a task queued in the dead process's memory and one mid-run."""
    first = await bootstrap(_settings(data / "restart"))
    try:
        first.repositories.knowledge_bases.create("docs")
        dead = _dead_owner()
        runs = IngestRunRepository(first.database, first.namespace)
        ids = []
        for n, running in ((1, False), (2, True)):
            key = f"{first.namespace}/docs/x{n}/n.md"
            first.objects.put(key, io.BytesIO(TEXT + str(n).encode()), content_type="text/markdown")
            accepted = runs.accept(
                document_id=uuid.uuid4().hex,
                kb_name="docs",
                filename=f"n{n}.md",
                mime_type="text/markdown",
                sha256=uuid.uuid4().hex * 2,
                size=len(TEXT) + 1,
                object_key=key,
                lease_owner=dead,
                lease_until=utcnow() + timedelta(hours=1),  # far away: the owner is gone
            )
            assert accepted.task is not None
            if running:
                runs.start(accepted.task.id, owner=dead, lease_s=3600, max_attempts=2)
            ids.append(accepted.task.id)
    finally:
        await first.stop()
    second = await bootstrap(_settings(data / "restart"))
    try:
        for job_id in ids:
            task = await _settled(second, job_id)
            assert task.status == "completed", task
            assert any("re-queued" in line for line in task.log)
            assert _vectors(second, task.document_id) > 0
    finally:
        await second.stop()


async def test_a_transient_failure_is_retried_by_itself(app: EagleApp, kb: str) -> None:
    calls = {"n": 0}

    def flaky(batch: UpsertBatch) -> UpsertBatch:
        calls["n"] += 1
        if calls["n"] == 1:
            raise BackendUnavailableError("vector store unavailable", backend="milvus")
        return batch

    app.bus.subscribe(hooks.upsert_vectors, flaky, plugin="flaky", priority=-2000)
    try:
        submission = _submit(app, kb)
        task = await _settled(app, submission.job_id)
    finally:
        app.bus.unsubscribe_plugin("flaky")
    assert (task.status, task.attempts, task.error) == ("completed", 2, None)
    assert any("attempt 1 failed" in line for line in task.log)
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed" and _vectors(app, document.id) == document.chunk_count


class _Outage:
    """How many more times the success step meets a database outage."""

    failures = 0


def _failing_complete(outage: _Outage) -> Any:
    """The real repository's success step, failing while ``outage.failures`` lasts."""
    complete = IngestRunRepository.complete

    def failing(repository: IngestRunRepository, *args: Any, **kwargs: Any) -> Any:
        if outage.failures > 0:
            outage.failures -= 1
            raise BackendUnavailableError("metadata database unavailable", backend="sqlite")
        return complete(repository, *args, **kwargs)

    return failing


async def test_a_failing_success_step_is_undone_then_retried_to_the_limit(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app graph is frozen: the outage is injected into the repository class's success step.
    flaky = _Outage()
    monkeypatch.setattr(IngestRunRepository, "complete", _failing_complete(flaky))
    flaky.failures = 5  # more than max_attempts (2)
    failing = _submit(app, kb, name="gone.md")
    task = await _settled(app, failing.job_id)
    assert task.status == "failed" and task.attempts == 2
    assert "failed after 2 attempts: metadata database unavailable" in (task.error or "")
    assert _vectors(app, failing.document_id) == 0  # the attempt's writes are undone
    assert app.repositories.documents.get(failing.document_id).status == "failed"
    flaky.failures = 0
    app.ingest.retry(failing.job_id)  # by hand: a fresh budget of attempts
    retried = await _settled(app, failing.job_id)
    assert (retried.status, retried.attempts) == ("completed", 3)
    assert _vectors(app, failing.document_id) > 0


async def test_retry_by_hand_accepts_stranded_tasks_and_refuses_held_ones(
    app: EagleApp, kb: str
) -> None:
    runs = app.repositories.ingest_runs
    submission = _submit(app, kb, TEXT + b"held", "held.md")
    await _settled(app, submission.job_id)
    key = app.repositories.documents.get(submission.document_id).object_key
    assert key is not None
    held = runs.accept(
        document_id=uuid.uuid4().hex,
        kb_name=kb,
        filename="other.md",
        mime_type="text/markdown",
        sha256=uuid.uuid4().hex * 2,
        size=10,
        object_key=key,
        lease_owner="another-host:1:live",
        lease_until=utcnow() + timedelta(hours=1),
    )
    assert held.task is not None
    with pytest.raises(ConflictError, match="held by a running worker"):
        app.ingest.retry(held.task.id)
    stranded = runs.accept(
        document_id=uuid.uuid4().hex,
        kb_name=kb,
        filename="stranded.md",
        mime_type="text/markdown",
        sha256=uuid.uuid4().hex * 2,
        size=10,
        object_key=key,
        lease_owner=_dead_owner(),
        lease_until=utcnow() + timedelta(hours=1),
    )
    assert stranded.task is not None
    app.ingest.retry(stranded.task.id)
    assert (await _settled(app, stranded.task.id)).status == "completed"


async def test_a_clean_stop_hands_back_the_lease_of_a_running_task(data: Path) -> None:
    """Stopped mid-run, a task's lease is released like a queued one's: the next start runs it
    at once, not after the lease (an hour here) runs out."""
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(data / "stop-mid-run"), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"ingest": {"lease_s": 3600}},
    )
    entered, go_on = threading.Event(), threading.Event()

    def blocks(batch: UpsertBatch) -> UpsertBatch:
        entered.set()
        go_on.wait(30)
        raise RuntimeError("this attempt was stopped")  # its app is gone: write nothing

    first = await bootstrap(settings)
    try:
        first.repositories.knowledge_bases.create("docs")
        first.bus.subscribe(hooks.upsert_vectors, blocks, plugin="blocks", priority=-2000)
        submission = _submit(first, "docs")
        assert await asyncio.to_thread(entered.wait, 30)
    finally:
        await first.stop()
        go_on.set()
    second = await bootstrap(settings)
    try:
        task = await _settled(second, submission.job_id)
        assert task.status == "completed", task
        assert _vectors(second, submission.document_id) > 0
    finally:
        await second.stop()


async def test_a_stopped_queue_refuses_submissions_with_a_clear_error(data: Path) -> None:
    application = await bootstrap(_settings(data / "stopped"), start_queue=False)
    try:
        application.repositories.knowledge_bases.create("docs")
        with pytest.raises(BackendUnavailableError, match="not running") as raised:
            _submit(application, "docs")
        assert raised.value.fields["retry_after"] == 5
    finally:
        await application.stop()


async def test_completed_documents_whose_vectors_a_crash_lost_are_ingested_again(
    data: Path,
) -> None:
    """Milvus Lite loses rows written since its last flush when the process is killed."""
    first = await bootstrap(_settings(data / "unflushed"))
    try:
        first.repositories.knowledge_bases.create("docs")
        lost = _submit(first, "docs", TEXT + b"lost", "lost.md")
        kept = _submit(first, "docs", TEXT + b"kept", "kept.md")
        for submission in (lost, kept):
            assert (await _settled(first, submission.job_id)).status == "completed"
        await first.queue.join()  # type: ignore[attr-defined]
        # What the kill leaves: both completions recorded, no flush recorded, one document's
        # rows gone with the process's memory.
        with first.database.engine.begin() as connection:
            connection.execute(text("UPDATE tasks SET vectors_flushed = false"))
        first.vectors.delete_documents([lost.document_id])
        await first.flush_vectors()
    finally:
        await first.stop()
    second = await bootstrap(_settings(data / "unflushed"))
    try:
        task = await _settled(second, lost.job_id)
        assert task.status == "completed" and any("vectors were lost" in x for x in task.log)
        document = second.repositories.documents.get(lost.document_id)
        assert _vectors(second, lost.document_id) == document.chunk_count > 0
        intact = second.repositories.tasks.get(kept.job_id)
        assert intact.attempts == 1 and not any("vectors were lost" in x for x in intact.log)
        await second.queue.join()  # type: ignore[attr-defined]
        assert second.repositories.tasks.unflushed() == []  # the idle flush recorded both
    finally:
        await second.stop()


async def test_rows_a_failed_flush_dropped_are_ingested_again_without_a_restart(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk: Milvus Lite's flush failed and dropped the rows written since the last
    one; the next flush succeeded and recorded every completed task flushed, so documents
    stayed completed with no vectors (15 of 71 here) until doctor --consistency."""
    from eagle_rag.errors import VectorStoreError

    flush = app.vectors.flush
    lost = _submit(app, kb, TEXT + b"dropped by the failed flush", "lost.md")

    def failing_flush(collections: Any = ()) -> None:
        monkeypatch.setattr(app.vectors, "flush", flush)  # the next one succeeds
        app.vectors.delete_documents([lost.document_id])  # what the failure took
        raise VectorStoreError("Milvus flush failed: [Errno 28] No space left on device")

    monkeypatch.setattr(app.vectors, "flush", failing_flush)
    assert (await _settled(app, lost.job_id)).status == "completed"
    await app.queue.join()  # type: ignore[attr-defined]  (its idle flush fails)
    assert _vectors(app, lost.document_id) == 0
    later = _submit(app, kb, TEXT + b"after the disk was freed", "later.md")
    assert (await _settled(app, later.job_id)).status == "completed"
    await app.queue.join()  # type: ignore[attr-defined]  (this idle flush succeeds)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        task = app.repositories.tasks.get(lost.job_id)
        if task.status == "completed" and _vectors(app, lost.document_id) > 0:
            break
        await asyncio.sleep(0.2)
    assert any("vectors were lost" in line for line in task.log), task.log
    document = app.repositories.documents.get(lost.document_id)
    assert _vectors(app, lost.document_id) == document.chunk_count > 0
    assert _vectors(app, later.document_id) > 0


async def test_a_task_out_of_attempts_deletes_what_its_dead_attempts_wrote(data: Path) -> None:
    """Each attempt died with its process mid-run, leaving rows no worker of its own undoes:
    the task fails with "gave up", and its document's rows go with it (they were evidence)."""
    first = await bootstrap(_settings(data / "exhausted"))
    try:
        first.repositories.knowledge_bases.create("docs")
        submission = _submit(first, "docs", TEXT + b"exhausted", "x.md")
        assert (await _settled(first, submission.job_id)).status == "completed"
        assert _vectors(first, submission.document_id) > 0  # what the dead attempts wrote
        with first.database.engine.begin() as connection:  # queued for another attempt
            connection.execute(
                text("UPDATE tasks SET status = 'queued' WHERE id = :id"),
                {"id": submission.job_id},
            )
        runs = IngestRunRepository(first.database, first.namespace)
        second_attempt = runs.start(
            submission.job_id, owner=_dead_owner(), lease_s=3600, max_attempts=2
        )  # ... whose process then died mid-run: its lease names a dead process
        assert second_attempt.outcome == "claimed" and second_attempt.attempts == 2
        await first.flush_vectors()
    finally:
        await first.stop()
    second = await bootstrap(_settings(data / "exhausted"))
    try:
        task = await _settled(second, submission.job_id)
        # The task reads "failed" as its attempt is refused; the rows go right after that, in
        # the same worker run: wait for it to end before counting them.
        await second.queue.join()
        assert task.status == "failed" and (task.error or "").startswith("gave up after 2")
        assert second.repositories.documents.get(submission.document_id).status == "failed"
        assert _vectors(second, submission.document_id) == 0
    finally:
        await second.stop()
