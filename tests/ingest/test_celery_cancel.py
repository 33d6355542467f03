"""Cancel across processes: a real Celery worker (Redis, PostgreSQL, a Milvus server) reading a
500-page scan stops within a few pages of a cancel written by the submitting process. The worker
runs with ``ingest.ocr_warm`` and warms its OCR models when it bootstraps."""

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
from eagle_rag.ingest.cancel import cancel_task
from eagle_rag.ingest.celery_app import CeleryQueue
from eagle_rag.settings import load_settings
from tests.ingest.celery_setup import celery_environment
from tests.ingest.long_scan import PAGES, long_scan

pytestmark = pytest.mark.integration
BROKER = "redis://127.0.0.1:6379/11"


@pytest.fixture
def environment(tmp_path: Path, postgres_url: str, milvus_uri: str) -> dict[str, str]:
    return celery_environment(
        tmp_path,
        postgres_url,
        milvus_uri,
        BROKER,
        EAGLE_RAG_INGEST__PROGRESS_INTERVAL_S="0.2",
        EAGLE_RAG_INGEST__OCR_WARM="true",
    )


async def _until(app: EagleApp, job_id: str, done: object, seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done(app.repositories.tasks.get(job_id)):  # type: ignore[operator]
            return
        await asyncio.sleep(0.2)
    output = await asyncio.to_thread(log.read_text)
    raise AssertionError(f"timed out: {app.repositories.tasks.get(job_id)}\n{output}")


async def test_a_celery_worker_stops_a_long_scan_when_it_is_cancelled(
    environment: dict[str, str], worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    app = await bootstrap(load_settings(environment))
    try:
        assert isinstance(app.queue, CeleryQueue)
        kb = f"cancel-{uuid.uuid4().hex[:8]}"
        app.repositories.knowledge_bases.create(kb)
        submission = app.ingest.submit_file(
            kb_name=kb, filename="long.pdf", stream=io.BytesIO(long_scan())
        )
        job = submission.job_id
        # Per-page progress written by the worker process, read here.
        await _until(app, job, lambda t: t.phase == "parse" and t.progress_current >= 2, 240, log)
        assert app.repositories.tasks.get(job).progress_total == PAGES
        assert cancel_task(app.repositories.tasks, job).status == "failed"
        # The worker notices, stops, undoes its writes and notes it after the cancel's line,
        # leaving the cancel's status and reason as they are.
        await _until(app, job, lambda t: " stopped: " in t.log[-1], 60, log)
        task = app.repositories.tasks.get(job)
        assert "cancelled by request" in (task.error or "")
        assert task.progress_current < PAGES // 2
        document = app.repositories.documents.get(submission.document_id)
        assert document.status == "failed"
        assert app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document.id)) == 0
        assert worker.poll() is None  # the worker lives on for the next task
        output = await asyncio.to_thread(log.read_text)
        assert "warmed the pdf parser" in output  # ingest.ocr_warm: loaded when work began
    finally:
        await app.stop()
