"""A Celery worker's JSON log lines carry the id of the task that wrote them: a real worker
process (Redis, PostgreSQL, a Milvus server) runs two ingests one after the other."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from eagle_rag.bootstrap import bootstrap
from eagle_rag.settings import load_settings
from tests.ingest.celery_setup import celery_environment

pytestmark = pytest.mark.integration
BROKER = "redis://127.0.0.1:6379/15"


@pytest.fixture
def environment(tmp_path: Path, postgres_url: str, milvus_uri: str) -> dict[str, str]:
    return celery_environment(tmp_path, postgres_url, milvus_uri, BROKER, EAGLE_LOG_FORMAT="json")


@pytest.mark.parametrize("worker", ["prefork", "solo"], indirect=True)
async def test_each_tasks_log_lines_carry_its_own_task_id(
    environment: dict[str, str], worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    # A worker process runs all its tasks on one event loop (task_loop.py): every line used to
    # carry the id of the first task that process ran. A document with nothing to index logs
    # its failure from inside the task.
    log = tmp_path / "worker.log"
    app = await bootstrap(load_settings(environment))
    try:
        kb = f"logged-{uuid.uuid4().hex[:8]}"
        app.repositories.knowledge_bases.create(kb)
        jobs = []
        for name, body in (("first.json", b"{}"), ("second.json", b"{ }")):  # two documents
            job = app.ingest.submit_file(kb_name=kb, filename=name, stream=io.BytesIO(body))
            jobs.append(job)
            deadline = time.monotonic() + 90
            while app.repositories.tasks.get(job.job_id).status != "failed":
                assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
                await asyncio.sleep(0.3)
    finally:
        await app.stop()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert len({job.job_id for job in jobs}) == len({job.document_id for job in jobs}) == 2
    for job in jobs:
        failures = [
            line
            for line in lines
            if line["logger"] == "eagle_rag.ingest.pipeline" and job.document_id in line["message"]
        ]
        assert failures and all(f.get("task_id") == job.job_id for f in failures), failures
