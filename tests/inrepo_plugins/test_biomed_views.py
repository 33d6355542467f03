"""The biomed view collection as the host sees it: the manifest declares eagle_text_biomed a view
of eagle_text, so the consistency check (``eagle-rag doctor --consistency``) and eval's chunk
count leave its rows out of a document's count, while stray view rows are still found."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.consistency import check
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import eq
from plugins.biomed.collection import biomed_row
from tests.inrepo_plugins.test_biomed_app import (
    COLLECTION,
    METFORMIN,
    PLAIN,
    _row,
    biomed_settings,
    documents,
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    application = await bootstrap(biomed_settings(tmp_path_factory.mktemp("biomed-views")))
    application.repositories.knowledge_bases.create("med")
    for name, text in (("metformin.md", METFORMIN), ("plain.md", PLAIN)):
        application.ingest.submit_file(
            kb_name="med", filename=name, stream=io.BytesIO(text.encode())
        )
    await application.queue.join()  # type: ignore[attr-defined]
    await application.flush_vectors()
    yield application
    await application.stop()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_manifest_declares_the_view_and_its_base(app: EagleApp) -> None:
    assert app.plugins.collection_views() == {COLLECTION: TEXT_COLLECTION}


@pytest.mark.asyncio(loop_scope="module")
async def test_view_rows_are_not_extra_vectors_and_repair_queues_nothing(app: EagleApp) -> None:
    docs = documents(app, "med")
    metformin = docs["metformin.md"]
    view_rows = app.vectors.query(COLLECTION, eq("document_id", metformin.id))
    assert len(view_rows) == metformin.chunk_count  # the view holds a copy of every chunk
    report = await asyncio.to_thread(check, app)
    assert report.vectors[COLLECTION] == metformin.chunk_count
    assert report.clean, report.findings
    repaired = await asyncio.to_thread(check, app, repair=True)
    assert repaired.clean and not repaired.findings
    assert not app.repositories.tasks.count_by_status().get("queued")
    assert {d.status for d in documents(app, "med").values()} == {"completed"}


@pytest.mark.asyncio(loop_scope="module")
async def test_a_view_row_of_an_unknown_document_is_still_an_orphan(app: EagleApp) -> None:
    dim = app.encoders.collection_dim(COLLECTION)
    row = _row("stray-view-row", "Aspirin", {"biomed_entities": ["mesh:D001241"]}, dim)
    app.vectors.upsert(COLLECTION, [biomed_row({**row, "document_id": "f" * 32})])
    await app.flush_vectors()
    report = await asyncio.to_thread(check, app, repair=True)
    [finding] = report.findings
    assert (finding.kind, finding.collection) == ("orphan_vectors", COLLECTION)
    assert finding.repaired == "vectors deleted"
    assert (await asyncio.to_thread(check, app)).clean
