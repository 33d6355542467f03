"""Production queue: a real Celery worker process on Redis runs the ingest, against PostgreSQL
and a Milvus server, with the same settings (environment) as the submitting process."""

from __future__ import annotations

import asyncio
import io
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.celery_app import CeleryQueue
from eagle_rag.settings import load_settings
from tests.ingest.celery_setup import celery_environment

pytestmark = pytest.mark.integration
BROKER = "redis://127.0.0.1:6379/13"
FLUSH_INTERVAL_S = 15


@pytest.fixture
def environment(tmp_path: Path, postgres_url: str, milvus_uri: str) -> dict[str, str]:
    # Longer than this test takes to run two small tasks: the second is left to the idle flush.
    interval = str(FLUSH_INTERVAL_S)
    return celery_environment(
        tmp_path, postgres_url, milvus_uri, BROKER, EAGLE_RAG_WORKER__FLUSH_INTERVAL_S=interval
    )


# Both pools deployments use: prefork (the default; tasks run in a child process) and solo.
@pytest.mark.parametrize("worker", ["solo", "prefork"], indirect=True)
async def test_celery_worker_runs_the_ingest(
    environment: dict[str, str], worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    app = await bootstrap(load_settings(environment))
    try:
        assert isinstance(app.queue, CeleryQueue)
        kb = f"celery-{uuid.uuid4().hex[:8]}"  # the database is shared by tests (and pools)
        app.repositories.knowledge_bases.create(kb)
        submission = app.ingest.submit_file(
            kb_name=kb,
            filename="notes.md",
            stream=io.BytesIO(b"# Notes\n\nCelery ran me."),
        )
        deadline = time.monotonic() + 90
        task = app.repositories.tasks.get(submission.job_id)
        while task.status not in ("completed", "failed") and time.monotonic() < deadline:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            await asyncio.sleep(0.5)
            task = app.repositories.tasks.get(submission.job_id)
        log = (tmp_path / "worker.log").read_text()[-3000:]
        assert task.status == "completed", (task.error, log)
        document = app.repositories.documents.get(submission.document_id)
        stored = app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document.id))
        assert document.chunk_count == stored > 0
        # A second task right after the first is not flushed by its own end (at most one flush
        # per FLUSH_INTERVAL_S, and the first task's end flushed): only the worker's idle flush,
        # in whichever process ran the task, covers it. (A prefork worker whose idle flush ran
        # in the main process, where there is no app, never flushed it.)
        second = app.ingest.submit_file(
            kb_name=kb, filename="more.md", stream=io.BytesIO(b"# More\n\nAnd me, right after.")
        )
        deadline = time.monotonic() + 90
        while app.repositories.tasks.get(second.job_id).status != "completed":
            assert time.monotonic() < deadline, log
            await asyncio.sleep(0.2)
        assert second.job_id in {t.id for t in app.repositories.tasks.unflushed()}
        assert await _flushed(app, second.job_id, deadline), log
    finally:
        await app.stop()


async def _flushed(app: EagleApp, job_id: str, deadline: float) -> bool:
    """Whether the task completes and its vectors get flushed before the deadline (the DB is
    shared by tests: only this task counts)."""
    for _ in range(int(max(0.0, deadline - time.monotonic()) / 0.5) + 1):
        done = app.repositories.tasks.get(job_id).status == "completed"
        if done and job_id not in {task.id for task in app.repositories.tasks.unflushed()}:
            return True
        await asyncio.sleep(0.5)
    return False
