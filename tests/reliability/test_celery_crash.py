"""A Celery worker killed (``kill -9``) mid-task, on Redis + PostgreSQL + a Milvus server: a new
worker takes the lost task over at once (its lease names a process that is gone) and runs the
rest; every document completes without a manual retry, each marker word finds exactly its own
document, no duplicate chunks, and the consistency check is clean."""

from __future__ import annotations

import asyncio
import io
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from sqlalchemy import update

from benchmarks.crash_recovery import document_text, marker
from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.consistency import check
from eagle_rag.db.tables import DocumentRow, TaskRow, utcnow
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.cancel import CANCELLED
from eagle_rag.ingest.leases import host_prefix
from eagle_rag.settings import load_settings
from tests.databases import postgres_database
from tests.ingest.celery_setup import celery_environment
from tests.outage_proxy import CuttableProxy
from tests.servers import milvus_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]
BROKER = "redis://127.0.0.1:6379/12"
DOCUMENTS = 6


def _worker(env: dict[str, str], log: Path, *pool: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "eagle_rag.ingest.worker", "worker"]
    command += [*(pool or ("--pool=solo",)), "--queues=eagle_rag_ingest", "--loglevel=INFO"]
    command += ["--without-heartbeat", "--without-gossip", "--without-mingle"]
    with log.open("ab") as out:
        return subprocess.Popen(
            command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )


def _env(tmp_path: Path, stores: tuple[str, str], **extra: str) -> dict[str, str]:
    """A Celery deployment on the test's own stores and namespace, its broker db emptied first."""
    postgres_url, milvus_uri = stores
    return celery_environment(
        tmp_path, postgres_url, milvus_uri, BROKER, **{"PLUGIN_NAMESPACE": "crashns", **extra}
    )


async def _wait(app: EagleApp, ids: list[str], want: str, limit_s: float) -> dict[str, str]:
    deadline = time.monotonic() + limit_s
    statuses: dict[str, str] = {}
    while time.monotonic() < deadline:
        statuses = {i: app.repositories.tasks.get(i).status for i in ids}
        if want == "any-processing" and "processing" in statuses.values():
            return statuses
        if want == "all-settled" and set(statuses.values()) <= {"completed", "failed"}:
            return statuses
        await asyncio.sleep(0.1)
    return statuses


@pytest.fixture
def own_stores(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A database and a Milvus server of this test's own: the consistency check reads every
    row and vector of the namespace, and the session's shared ones hold other tests' documents."""
    with postgres_database() as url, milvus_server(tmp_path / "milvus", tmp_path) as uri:
        yield url, uri


async def test_a_killed_worker_s_task_is_taken_over_and_everything_completes(
    tmp_path: Path, own_stores: tuple[str, str]
) -> None:
    env = _env(tmp_path, own_stores)
    app = await bootstrap(load_settings(env))
    log = tmp_path / "worker.log"
    first = _worker(env, log)
    second = None
    try:
        app.repositories.knowledge_bases.create("celery-crash")
        rng = random.Random(12)
        words = [marker(rng) for _ in range(DOCUMENTS)]
        jobs, documents = [], {}
        for i, word in enumerate(words):
            text = document_text(word, i, 120, rng)
            submission = app.ingest.submit_file(
                kb_name="celery-crash", filename=f"r{i}.md", stream=io.BytesIO(text.encode())
            )
            jobs.append(submission.job_id)
            documents[word] = submission.document_id
        seen = await _wait(app, jobs, "any-processing", 90)
        assert "processing" in seen.values(), (seen, log.read_text()[-3000:])
        first.send_signal(signal.SIGKILL)
        first.wait()
        at_kill = {i: app.repositories.tasks.get(i).status for i in jobs}
        assert set(at_kill.values()) - {"completed"}, at_kill  # the kill came mid-run
        second = _worker(env, log)
        final = await _wait(app, jobs, "all-settled", 180)
        assert set(final.values()) == {"completed"}, (final, log.read_text()[-3000:])
        lost = [i for i, s in at_kill.items() if s == "processing"]
        for job in lost:
            task = app.repositories.tasks.get(job)
            assert any("re-queued" in line for line in task.log), task.log
            assert not any("retried by hand" in line for line in task.log)
        await asyncio.to_thread(app.vectors.flush)
        for word, document_id in documents.items():
            [hits] = app.vectors.search_sparse(
                TEXT_COLLECTION, [word], top_k=10, where=f.eq("kb_name", "celery-crash")
            )
            assert {h.fields["document_id"] for h in hits} == {document_id}, word
            rows = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
            ids = [r["id"] for r in rows]
            assert len(ids) == len(set(ids))
            assert len(ids) == app.repositories.documents.get(document_id).chunk_count
        report = await asyncio.to_thread(check, app)
        assert report.clean, report.findings
    finally:
        await _shut_down(app, first, second)


async def _shut_down(app: EagleApp, *workers: subprocess.Popen[bytes] | None) -> None:
    """Stop the workers (killed when one does not stop within 20 s) and the app, and empty the
    broker's database for the next test."""
    for worker in workers:
        if worker is not None and worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
    await app.stop()
    redis.Redis.from_url(BROKER).flushdb()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


async def test_a_killed_prefork_child_s_task_is_re_queued_by_its_own_worker(
    tmp_path: Path, own_stores: tuple[str, str]
) -> None:
    """Every pool child held leases under the owner its parent made at import: a killed
    child's task looked held by a live process (the parent), and siblings were one owner."""
    # The worker's recovery looks every third of a lease.
    env = _env(tmp_path, own_stores, EAGLE_RAG_INGEST__LEASE_S="6")
    app = await bootstrap(load_settings(env))
    log = tmp_path / "worker.log"
    worker = _worker(env, log, "--pool=prefork", "--concurrency=1")
    try:
        app.repositories.knowledge_bases.create("prefork-crash")
        text = document_text(marker(random.Random(5)), 0, 400, random.Random(5))
        job = app.ingest.submit_file(
            kb_name="prefork-crash", filename="long.md", stream=io.BytesIO(text.encode())
        ).job_id
        seen = await _wait(app, [job], "any-processing", 90)
        assert "processing" in seen.values(), (seen, log.read_text()[-3000:])
        [child] = _children(worker.pid)
        holder = app.repositories.tasks.get(job).lease_owner or ""
        assert holder.split(":")[1] == str(child)  # the child's own, not its parent's
        os.kill(child, signal.SIGKILL)
        final = await _wait(app, [job], "all-settled", 180)  # the same worker, a new child
        assert final == {job: "completed"}, (final, log.read_text()[-3000:])
    finally:
        await _shut_down(app, worker)


async def test_a_claim_that_meets_a_database_outage_is_tried_again_not_lost(
    tmp_path: Path, own_stores: tuple[str, str]
) -> None:
    """A short PostgreSQL outage at a worker's claim: the error escaped the Celery task, the
    message was acknowledged and lost, and the task stayed queued (no lease, attempts 0) for
    good. The worker now sends it again after a backoff; it completes once the database is
    back, and the failed claim counts no attempt."""
    postgres_url = own_stores[0]
    env = _env(tmp_path, own_stores)
    app = await bootstrap(load_settings(env))
    log = tmp_path / "worker.log"
    with CuttableProxy.for_url(postgres_url) as proxy:
        worker = _worker({**env, "EAGLE_DATABASE_URL": proxy.url(postgres_url)}, log)
        try:
            app.repositories.knowledge_bases.create("pg-outage")

            def submit(name: str) -> str:
                text = f"# {name}\n\nA note about {name}, its inverter and its wiring."
                return app.ingest.submit_file(
                    kb_name="pg-outage", filename=f"{name}.md", stream=io.BytesIO(text.encode())
                ).job_id

            warm = submit("warm")  # the worker's app is built; the next task goes to the claim
            assert await _wait(app, [warm], "all-settled", 120) == {warm: "completed"}, (
                log.read_text()[-3000:]
            )
            proxy.cut()
            job = submit("cut")
            broker = redis.Redis.from_url(BROKER)
            for _ in range(300):  # until the worker took the message
                if not broker.llen("eagle_rag_ingest"):
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(3)  # the worker took the message and its claim failed
            proxy.restore()
            final = await _wait(app, [job], "all-settled", 90)
            assert final == {job: "completed"}, (final, log.read_text()[-3000:])
            assert app.repositories.tasks.get(job).attempts == 1
        finally:
            await _shut_down(app, worker)


async def test_a_worker_undoes_a_cancelled_attempt_whose_worker_was_killed(
    tmp_path: Path, own_stores: tuple[str, str]
) -> None:
    """A worker killed right after a cancel, before its stopped attempt deleted what it wrote:
    the failed document's vectors stayed until doctor --repair. A live worker now takes the
    cleanup over once the stopped attempt's lease names a process that is gone."""
    env = _env(tmp_path, own_stores, EAGLE_RAG_INGEST__LEASE_S="3")  # a sweep every second
    app = await bootstrap(load_settings(env))
    log = tmp_path / "worker.log"
    worker = _worker(env, log)
    try:
        app.repositories.knowledge_bases.create("cancel-kill")
        text = b"# Wombats\n\nThe cancelled document talks about wombats.\n"
        job = app.ingest.submit_file(
            kb_name="cancel-kill", filename="c.md", stream=io.BytesIO(text)
        )
        final = await _wait(app, [job.job_id], "all-settled", 120)
        assert final == {job.job_id: "completed"}, log.read_text()[-3000:]
        # What the kill left: the cancel failed task and document, the stopped attempt kept
        # its lease to undo its writes, and its process is gone.
        dead = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        await dead.wait()
        with app.database.session() as session:
            session.execute(
                update(TaskRow)
                .where(TaskRow.id == job.job_id)
                .values(
                    status="failed",
                    error=CANCELLED,
                    lease_owner=f"{host_prefix()}{dead.pid}:deadbeef",
                    lease_expires_at=utcnow() + timedelta(minutes=5),
                )
            )
            session.execute(
                update(DocumentRow)
                .where(DocumentRow.id == job.document_id)
                .values(status="failed", error=CANCELLED)
            )
        where = f.eq("document_id", job.document_id)
        assert app.vectors.count(TEXT_COLLECTION, where) > 0
        for _ in range(100):
            task = app.repositories.tasks.get(job.job_id)
            if task.lease_owner is None:
                break
            await asyncio.sleep(0.2)
        assert (task.status, task.lease_owner) == ("failed", None), log.read_text()[-3000:]
        assert "its writes were undone" in task.log[-1]
        assert app.vectors.count(TEXT_COLLECTION, where) == 0
    finally:
        await _shut_down(app, worker)
