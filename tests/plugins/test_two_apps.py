"""Two apps in one process, each on its own data dir, keep their plugins and stores apart.

Core is created once per app: its EMBED_TEXT and UPSERT_VECTORS subscribers write through the
vector store of the app that loaded it, and unloading one app leaves the other one working.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings


async def _app(directory: Path) -> EagleApp:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(directory), "EAGLE_ENCODER_MODE": "deterministic"}
    )
    return await bootstrap(settings)


async def _ingest(app: EagleApp, kb: str, name: str, text: str) -> str:
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(text.encode())
    )
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    return document.id


def _documents_in_store(app: EagleApp) -> set[str]:
    rows = app.vectors.query(TEXT_COLLECTION, f.ne("id", ""), output_fields=["document_id"])
    return {row["document_id"] for row in rows}


async def test_two_apps_side_by_side_stay_apart(tmp_path: Path) -> None:
    first = await _app(tmp_path / "first")
    second = await _app(tmp_path / "second")
    try:
        [core_one] = first.plugins.loaded
        [core_two] = second.plugins.loaded
        assert core_one.plugin is not core_two.plugin
        first.repositories.knowledge_bases.create("docs")
        second.repositories.knowledge_bases.create("docs")
        solar = await _ingest(first, "docs", "solar.md", "# Solar\n\nThe inverter hums.\n")
        garden = await _ingest(second, "docs", "garden.md", "# Garden\n\nCompost the leaves.\n")
        # each app's Core wrote to its own store only
        assert _documents_in_store(first) == {solar}
        assert _documents_in_store(second) == {garden}
        found = await first.retrieval.search(QueryRequest("compost leaves", kb_names=("docs",)))
        assert {p.document_id for p in found.passages} <= {solar}

        await first.stop()  # unloads the first app's plugins
        late = await _ingest(second, "docs", "late.md", "# Late\n\nSeeds sprout in spring.\n")
        assert _documents_in_store(second) == {garden, late}
        pack = await second.retrieval.search(QueryRequest("seeds spring", kb_names=("docs",)))
        assert pack.passages and pack.passages[0].document_id == late
    finally:
        await second.stop()
