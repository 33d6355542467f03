"""One embedded app per test module (collection creation costs seconds); tests use their own KB.
And the Celery worker process the production-queue tests run against."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.settings import load_settings


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    """The real OCR engine with its models loaded (a module may override it)."""
    engine = OcrEngine()
    engine.warm()
    return engine


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    data = tmp_path_factory.mktemp("ingest-app")
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(Path(data)), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"ingest": {"embed_batch": 4, "chunk_size": 64, "chunk_overlap": 8}},
    )
    application = await bootstrap(settings)
    yield application
    await application.stop()


@pytest.fixture
def kb(app: EagleApp) -> str:
    name = f"kb-{uuid.uuid4().hex[:8]}"
    app.repositories.knowledge_bases.create(name)
    return name


# --- the production queue: a real Celery worker process -----------------------------------------


@pytest.fixture
def worker(
    environment: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[subprocess.Popen[bytes]]:
    """A Celery worker process with the test module's ``environment``, logging to
    ``tmp_path / "worker.log"``. Its pool is ``solo`` unless the test parametrizes this fixture
    indirectly (``prefork``, Celery's default: tasks run in a child process)."""
    pool = getattr(request, "param", "solo")
    log = (tmp_path / "worker.log").open("wb")
    command = [
        *(sys.executable, "-m", "celery", "-A", "eagle_rag.ingest.worker", "worker"),
        *(f"--pool={pool}", "--concurrency=1", "--queues=eagle_rag_ingest", "--loglevel=INFO"),
        *("--without-heartbeat", "--without-gossip", "--without-mingle"),
    ]
    process = subprocess.Popen(
        command, env={**os.environ, **environment}, stdout=log, stderr=subprocess.STDOUT
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()
