"""The gap between recording a Celery task and sending it to the broker (issue 14).

A task row is recorded first, then its message is sent. An API process that dies in between,
or a broker that refuses the message, used to leave a ``queued`` row no worker would ever
receive. Now the row carries a send lease (no owner, an expiry) that the successful send
drops; a worker's recovery loop re-sends every row whose send lease expired.

Real Redis, a real Celery worker process, a throw-away PostgreSQL database and the session's
Milvus server (in a namespace of its own). The API's broker connection runs through a TCP proxy
the test cuts, so its send fails exactly where a dying API would stop; the second case records
a row the way the API does and never sends it, as when the API is killed at that point.
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.db.tables import utcnow
from eagle_rag.settings import load_settings
from tests.databases import postgres_database
from tests.outage_proxy import CuttableProxy

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REDIS_DB = 11
LEASE_S = 3  # the send grace: recovery re-sends a row not handed to the broker after this
KB = "send-gap"


def _worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "eagle_rag.ingest.worker", "worker"]
    command += ["--pool=solo", "--queues=eagle_rag_ingest", "--loglevel=INFO"]
    command += ["--without-heartbeat", "--without-gossip", "--without-mingle"]
    with log.open("ab") as out:
        return subprocess.Popen(
            command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def _settled(app: EagleApp, ids: list[str], limit_s: float) -> dict[str, str]:
    deadline = time.monotonic() + limit_s
    while True:
        statuses = {i: app.repositories.tasks.get(i).status for i in ids}
        if set(statuses.values()) <= {"completed", "failed"} or time.monotonic() > deadline:
            return statuses
        await asyncio.sleep(0.2)


@pytest.fixture
async def celery_env(tmp_path: Path, milvus_uri: str) -> AsyncIterator[dict[str, str]]:
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    redis.Redis.from_url(broker).flushdb()
    with postgres_database() as url:
        yield {
            "EAGLE_DATA_DIR": str(tmp_path / "data"),
            "EAGLE_DATABASE_URL": url,
            "MILVUS_URI": milvus_uri,
            "EAGLE_RAG_QUEUE__BACKEND": "celery",
            "EAGLE_BROKER_URL": broker,
            "EAGLE_ENCODER_MODE": "deterministic",
            "PLUGIN_NAMESPACE": f"sendgap{uuid.uuid4().hex[:8]}",
            "EAGLE_RAG_INGEST__LEASE_S": str(LEASE_S),
        }
    redis.Redis.from_url(broker).flushdb()


def _submit(app: EagleApp, name: str, text: str) -> str:
    return app.ingest.submit_file(
        kb_name=KB, filename=name, stream=io.BytesIO(text.encode())
    ).job_id


async def test_tasks_the_broker_never_got_are_sent_by_recovery(
    tmp_path: Path, celery_env: dict[str, str]
) -> None:
    with CuttableProxy("127.0.0.1", 6379) as proxy:
        api_env = {**celery_env, "EAGLE_BROKER_URL": f"redis://127.0.0.1:{proxy.port}/{REDIS_DB}"}
        app = await bootstrap(load_settings(api_env))
        worker = _worker(celery_env, tmp_path / "worker.log")
        try:
            app.repositories.knowledge_bases.create(KB)
            sent = _submit(app, "sent.md", "# Sent\n\nThe platypus reached the broker.")

            proxy.cut()  # the API can no longer reach the broker; the worker still can
            started = time.monotonic()
            unsent = _submit(app, "unsent.md", "# Unsent\n\nThe echidna never left the API.")
            assert time.monotonic() - started < 10  # the upload does not wait on the broker
            row = app.repositories.tasks.get(unsent)
            assert row.status == "queued" and row.lease_owner is None
            assert row.lease_expires_at is not None  # the send lease recovery acts on

            final = await _settled(app, [sent, unsent], 120)
            log = (tmp_path / "worker.log").read_text()[-3000:]
            assert set(final.values()) == {"completed"}, (final, log)
            assert any("re-queued" in line for line in app.repositories.tasks.get(unsent).log)
            # The one the broker took was handed over: never re-sent, however long it waited.
            assert not any("re-queued" in line for line in app.repositories.tasks.get(sent).log)
        finally:
            _stop(worker)
            await app.stop()


async def test_a_row_recorded_by_an_api_killed_before_sending_is_recovered(
    tmp_path: Path, celery_env: dict[str, str]
) -> None:
    app = await bootstrap(load_settings(celery_env))
    worker = _worker(celery_env, tmp_path / "worker.log")
    try:
        app.repositories.knowledge_bases.create(KB)
        body = b"# Orphan\n\nThe bilby was recorded and then the API died."
        key = f"{app.namespace}/{KB}/orphan.md"
        stored = app.objects.put(key, io.BytesIO(body), content_type="text/markdown")
        # Exactly what submit_file records before it sends: the queue's send lease (it had
        # none before, and such a row waited for ever), then no send.
        assert app.queue.lease_s is not None
        accepted = app.repositories.ingest_runs.accept(
            document_id=uuid.uuid4().hex,
            kb_name=KB,
            filename="orphan.md",
            mime_type="text/markdown",
            sha256=stored.sha256,
            size=stored.size,
            object_key=key,
            lease_owner=app.queue.owner,
            lease_until=utcnow() + timedelta(seconds=app.queue.lease_s),
        )
        assert accepted.task is not None
        task_id = accepted.task.id
        final = await _settled(app, [task_id], 90)
        log = (tmp_path / "worker.log").read_text()[-3000:]
        assert final == {task_id: "completed"}, (final, log)
        assert app.repositories.documents.get(accepted.document.id).chunk_count > 0
    finally:
        _stop(worker)
        await app.stop()
