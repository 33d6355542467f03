"""One embedded app per test module (collection creation costs seconds); tests use their own KB."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.settings import load_settings


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
