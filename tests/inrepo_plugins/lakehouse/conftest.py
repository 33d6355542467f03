"""An app under the packaged ``lakehouse-bi`` profile, and helpers to ingest a project."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.settings import load_settings

PROJECT = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "lakehouse" / "jaffle_shop"


async def make_app(tmp_path: Path, profile: str = "lakehouse-bi") -> EagleApp:
    settings = load_settings(
        {
            "EAGLE_RAG_PROFILE": profile,
            "EAGLE_DATA_DIR": str(tmp_path / "data"),
            "EAGLE_ENCODER_MODE": "deterministic",
        }
    )
    return await bootstrap(settings)


@pytest.fixture
async def lakehouse_app(tmp_path: Path) -> AsyncIterator[EagleApp]:
    app = await make_app(tmp_path)
    yield app
    await app.stop()


async def ingest_files(
    app: EagleApp, kb: str, files: dict[str, bytes], metadata: dict[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """Submit every file (with this upload ``metadata``), wait for all, return
    {filename: {"status", "error", "id"}}."""
    if kb not in {k.name for k in app.repositories.knowledge_bases.list()}:
        await app.knowledge.create(kb, description="", creation_settings={})
    submitted = {}
    for name, data in files.items():
        submission = app.ingest.submit_file(
            kb_name=kb, filename=name, stream=io.BytesIO(data), metadata=metadata
        )
        submitted[name] = submission.document_id
    for _ in range(1200):
        documents = {n: app.repositories.documents.get(i) for n, i in submitted.items()}
        if all(d.status in ("completed", "failed") for d in documents.values()):
            await app.flush_vectors()
            return {
                n: {"status": d.status, "error": d.error or "", "id": d.id}
                for n, d in documents.items()
            }
        await asyncio.sleep(0.05)
    raise TimeoutError("ingest did not finish")


def project_files(root: Path = PROJECT) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
