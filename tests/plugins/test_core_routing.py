"""INGEST_ROUTE_SELECTORS chooses the pipeline, and the pipeline decides what is read how.

Through a real app (Core plus ``tests.plugins.override_plugin``): Core routes PDFs, images and
Office files to ``pixelrag`` (each PDF page from its text layer, or by OCR where it has none; an
Office file without text from its pictures) and other formats to ``knowhere``; a plugin that
routes a PDF to ``knowhere`` gets its text layer only, so a scan fails with a reason naming the
pipeline, and an image is refused.
"""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.db.records import DocumentRecord
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.plugins.core_defaults import KNOWHERE, PIXELRAG, CorePlugin
from eagle_rag.settings import load_settings
from tests.ingest import documents as docs
from tests.ingest import scans
from tests.plugins.override_plugin import NAMESPACE, OverridePlugin

pytestmark = pytest.mark.asyncio(loop_scope="module")
TYPESET = ("Text Layer Page", "This page was typeset, not scanned.")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    settings = load_settings(
        {
            "EAGLE_DATA_DIR": str(tmp_path_factory.mktemp("core-routing")),
            "EAGLE_ENCODER_MODE": "deterministic",
        },
        overrides={
            "plugins": {
                "enabled": ["eagle_rag.plugins.core_defaults", "tests.plugins.override_plugin"],
                "default_namespace": NAMESPACE,
            },
            "ingest": {"chunk_size": 64, "chunk_overlap": 8},
        },
    )
    application = await bootstrap(settings)
    yield application
    await application.stop()


@pytest.fixture
def probe(app: EagleApp) -> Iterator[OverridePlugin]:
    [loaded] = [p for p in app.plugins.loaded if p.manifest.namespace == NAMESPACE]
    plugin = loaded.plugin
    assert isinstance(plugin, OverridePlugin)
    yield plugin
    plugin.active.clear()


@pytest.fixture
def kb(app: EagleApp) -> str:
    name = f"kb-{uuid.uuid4().hex[:8]}"
    app.repositories.knowledge_bases.create(name)
    return name


async def _ingest(app: EagleApp, kb: str, name: str, data: bytes, **meta: Any) -> DocumentRecord:
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(data), metadata=meta
    )
    await app.queue.join()  # type: ignore[attr-defined]
    return app.repositories.documents.get(submission.document_id)


def _texts(app: EagleApp, document: DocumentRecord) -> str:
    rows = app.vectors.query(
        TEXT_COLLECTION, f.eq("document_id", document.id), output_fields=["text"]
    )
    return " ".join(str(r["text"]) for r in rows)


async def test_core_names_only_the_pipelines_it_runs() -> None:
    assert CorePlugin.manifest.provides_pipelines == (KNOWHERE, PIXELRAG)


async def test_core_routes_pdfs_and_images_to_pixelrag_and_text_to_knowhere(
    app: EagleApp, kb: str
) -> None:
    note = await _ingest(app, kb, "note.md", b"# Note\n\nForklift keys hang by the door.")
    assert note.status == "completed" and note.structure["pipeline"] == KNOWHERE
    mixed = scans.scanned_pdf([scans.zh_page()], text_first=scans.text_pdf([TYPESET]))
    document = await _ingest(app, kb, "mixed.pdf", mixed)
    assert document.status == "completed", document.error
    # Page by page: page 1 from its text layer, page 2 (a scan) by OCR.
    assert document.structure["pipeline"] == PIXELRAG and document.structure["ocr_pages"] == [2]
    assert "typeset" in _texts(app, document) and "叉车" in _texts(app, document)
    image = await _ingest(app, kb, "notice.png", scans.encode(scans.en_page(), "PNG"))
    assert image.status == "completed" and image.structure["pipeline"] == PIXELRAG
    assert image.structure["ocr_pages"] == [1]
    # An Office file may be only pictures (a scan pasted into Word): read by OCR when it is.
    report = await _ingest(app, kb, "report.docx", docs.docx_bytes())
    assert report.status == "completed" and report.structure["pipeline"] == PIXELRAG


async def test_a_plugin_routing_pdfs_to_knowhere_gets_their_text_layer_only(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("route")  # the plugin's route: the document's "pipeline" metadata
    mixed = scans.scanned_pdf([scans.zh_page()], text_first=scans.text_pdf([TYPESET]))
    document = await _ingest(app, kb, "mixed.pdf", mixed, pipeline=KNOWHERE)
    assert document.status == "completed" and document.structure["pipeline"] == KNOWHERE
    assert document.structure["ocr_pages"] == []
    assert "typeset" in _texts(app, document) and "叉车" not in _texts(app, document)

    scan = await _ingest(
        app, kb, "scan.pdf", scans.scanned_pdf([scans.en_page()]), pipeline=KNOWHERE
    )
    assert scan.status == "failed"
    assert "no text layer" in (scan.error or "") and "pixelrag" in (scan.error or "")
    assert _texts(app, scan) == ""
    png = scans.encode(scans.en_page(), "PNG")
    image = await _ingest(app, kb, "notice.png", png, pipeline=KNOWHERE)
    assert image.status == "failed" and "does not OCR" in (image.error or "")
