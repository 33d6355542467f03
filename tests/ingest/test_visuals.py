"""PixelRAG visual chunks through the real pipeline: figures, ruled tables and page tiles go to
eagle_visual with their anchors, their pictures to the object store; failures leave nothing."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from eagle_rag.bootstrap import EagleApp
from eagle_rag.db.records import DocumentRecord
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.ingest import visual_steps
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.ingest.service import Submission
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import EmbedRequest, QueryRequest, UpsertBatch, VisualFilter
from eagle_rag.retrieval.wire import search_response
from eagle_rag.storage.keys import validate_prefix
from tests.ingest import scans
from tests.ingest import visual_docs as vd

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _ingest(app: EagleApp, kb: str, data: bytes, name: str) -> Submission:
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(data)
    )
    await app.queue.join()  # type: ignore[attr-defined]
    return submission


def _visuals(app: EagleApp, document_id: str) -> list[dict[str, Any]]:
    rows = app.vectors.query(VISUAL_COLLECTION, f.eq("document_id", document_id))
    return sorted(rows, key=lambda r: (r["page"], r["chunk_type"]))


def _stored(app: EagleApp, key: str) -> bytes:
    return b"".join(app.objects.open(key))


async def test_a_text_pdf_gives_a_figure_and_a_table_with_their_anchors(
    app: EagleApp, kb: str
) -> None:
    submission = await _ingest(app, kb, vd.report_pdf(), "report.pdf")
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    assert set(document.collections_used) == {TEXT_COLLECTION, VISUAL_COLLECTION}
    figure, table = _visuals(app, document.id)
    assert (figure["chunk_type"], figure["page"]) == ("image", 1)
    assert (table["chunk_type"], table["page"]) == ("table", 2)
    assert vd.FIGURE_CAPTION in figure["content_summary"]
    assert "| Gearbox | 6 months | Mechanical |" in table["content_summary"]
    assert vd.TABLE_CAPTION in table["content_summary"]
    texts = {
        r["id"]: r for r in app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document.id))
    }
    for visual, heading in ((figure, "Wind Farm Report"), (table, "Maintenance")):
        source = texts[visual["source_chunk_id"]]  # a real text chunk of this document
        assert visual["page"] in source["page_nums"]
        assert visual["parent_section"] == source["path"] and heading in source["path"]
        metadata = visual["metadata"]
        x0, y0, x1, y1 = metadata["bbox"]
        assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
        picture = Image.open(io.BytesIO(_stored(app, metadata["object_key"])))
        assert picture.size == (metadata["width"], metadata["height"])
        assert metadata["object_key"].startswith(validate_prefix(app.namespace, kb, document.id))
    assert figure["metadata"]["media_type"] == "image/png"


async def test_a_scan_gives_page_tiles_found_by_their_ocr_text(app: EagleApp, kb: str) -> None:
    """...and none for a blank page: its empty tile surfaced in unrelated searches."""
    blank = Image.new("RGB", scans.en_page().size, "white")
    data = scans.scanned_pdf([scans.en_page(), blank])
    submission = await _ingest(app, kb, data, "scan.pdf")
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    [tile] = _visuals(app, document.id)
    assert (tile["chunk_type"], tile["page"]) == ("tile", 1)
    assert "Forklift" in tile["content_summary"]
    assert tile["metadata"]["media_type"] == "image/jpeg"
    [[hit]] = app.vectors.search_sparse(
        VISUAL_COLLECTION, ["forklift inspections"], top_k=1, where=f.eq("kb_name", kb)
    )
    assert hit.id == tile["id"]


async def test_a_markdown_file_has_no_visuals(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, b"# Notes\n\nPlain words only.", "notes.md")
    document = app.repositories.documents.get(submission.document_id)
    assert document.collections_used == (TEXT_COLLECTION,)
    assert _visuals(app, document.id) == []


async def test_deleting_the_document_deletes_its_visuals_and_pictures(
    app: EagleApp, kb: str
) -> None:
    submission = await _ingest(app, kb, vd.report_pdf(), "to-delete.pdf")
    keys = [r["metadata"]["object_key"] for r in _visuals(app, submission.document_id)]
    assert keys and all(app.objects.exists(k) for k in keys)
    await asyncio.to_thread(remove_document, app, submission.document_id)
    assert _visuals(app, submission.document_id) == []
    assert not any(app.objects.exists(k) for k in keys)


async def test_a_failed_visual_write_leaves_no_rows_and_no_pictures(app: EagleApp, kb: str) -> None:
    def refuse(batch: UpsertBatch) -> UpsertBatch:
        if batch.collection == VISUAL_COLLECTION:
            raise RuntimeError("visual store is full")
        return batch

    app.bus.subscribe(hooks.upsert_vectors, refuse, plugin="refuser", priority=100)
    try:
        submission = await _ingest(app, kb, vd.report_pdf(), "fails.pdf")
    finally:
        app.bus.unsubscribe_plugin("refuser")
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "failed" and "visual store is full" in (document.error or "")
    assert _visuals(app, document.id) == []
    prefix = validate_prefix(app.namespace, kb, document.id, "visuals")
    assert app.objects.list(prefix) == []


async def test_hybrid_search_returns_the_figure_under_sources_image(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, vd.report_pdf(), "search.pdf")
    pack = await app.retrieval.search(QueryRequest("turbine output by region", kb_names=(kb,)))
    body = search_response(pack)
    assert [p["collection"] for p in body["route"]["plans"]] == ["eagle_text", "eagle_visual"]
    images = body["sources"]["image"]
    figure = images[0]
    assert (figure["chunk_type"], figure["page"], figure["index"]) == ("image", 1, 1)
    assert figure["document_id"] == submission.document_id
    assert figure["url"] == f"/images/{figure['image_id']}"
    assert vd.FIGURE_CAPTION in figure["content_summary"] and figure["caption"]
    assert figure["source_chunk_id"] and figure["parent_section"].endswith("Wind Farm Report")
    assert len(figure["bbox"]) == 4 and figure["boxes"] == [{"page": 1, "bbox": figure["bbox"]}]
    assert 0 < figure["score"] <= 1
    # images never take the text passages' places: top_k text sources as before
    assert len(body["sources"]["text"]) == min(5, len(body["sources"]["text"])) > 0
    assert all(s["collection"] == "eagle_text" for s in body["sources"]["text"])
    tables = await app.retrieval.search(
        QueryRequest(
            "gearbox maintenance interval", kb_names=(kb,), mode="sparse", with_images=True
        )
    )
    first = search_response(tables)["sources"]["image"][0]
    assert first["chunk_type"] == "table" and first["page"] == 2


async def test_a_visual_filter_and_a_text_only_scope(app: EagleApp, kb: str) -> None:
    await _ingest(app, kb, vd.report_pdf(), "filtered.pdf")
    app.bus.subscribe(
        hooks.retrieve_visual_filter,
        lambda: VisualFilter(chunk_types=("table",)),
        plugin="tables-only",
        priority=100,
    )
    try:
        pack = await app.retrieval.search(QueryRequest("turbine output", kb_names=(kb,)))
    finally:
        app.bus.unsubscribe_plugin("tables-only")
    assert {s["chunk_type"] for s in search_response(pack)["sources"]["image"]} == {"table"}
    other = f"{kb}-text"
    app.repositories.knowledge_bases.create(other)
    await _ingest(app, other, b"# Turbines\n\nTurbine output is reported monthly.", "t.md")
    plain = await app.retrieval.search(QueryRequest("turbine output", kb_names=(other,)))
    assert search_response(plain)["sources"]["image"] == []
    skipped = {s.name: s.status for s in plain.steps}
    assert skipped["eagle_visual:plan"] == "skipped"
    assert [p.collection for p in plain.route.plans] == ["eagle_text"]  # type: ignore[union-attr]


async def test_the_text_and_visual_plans_share_one_query_embedding(app: EagleApp, kb: str) -> None:
    await _ingest(app, kb, vd.report_pdf(), "shared.pdf")
    queries: list[tuple[str, ...]] = []

    def spy(request: EmbedRequest) -> None:  # answers nothing: Core still embeds
        if request.purpose == "query":
            queries.append(request.texts)

    app.bus.subscribe(hooks.embed_text, spy, plugin="spy", priority=100)
    try:
        pack = await app.retrieval.search(QueryRequest("turbine output", kb_names=(kb,)))
    finally:
        app.bus.unsubscribe_plugin("spy")
    assert {s.name: s.status for s in pack.steps}["eagle_visual:dense"] == "ok"
    assert queries == [("turbine output",)]


async def test_pictures_in_pptx_and_docx_become_visuals_anchored_to_their_text(
    app: EagleApp, kb: str
) -> None:
    deck = await _ingest(app, kb, vd.deck_pptx(), "deck.pptx")
    [picture] = _visuals(app, deck.document_id)  # the 16 px icon is skipped
    assert (picture["chunk_type"], picture["page"]) == ("image", 2)
    assert "Regional Output" in picture["parent_section"]
    assert vd.SLIDE_TEXT in picture["content_summary"]
    x0, y0, x1, y1 = picture["metadata"]["bbox"]
    assert 0.15 < x0 < x1 < 0.85 and 0.3 < y0 < y1 <= 1

    report = await _ingest(app, kb, vd.report_docx(), "report.docx")
    [figure] = _visuals(app, report.document_id)
    assert figure["page"] == 0 and figure["parent_section"].endswith("Storm Season")
    texts = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", report.document_id))
    source = next(t for t in texts if t["id"] == figure["source_chunk_id"])
    assert vd.DOC_TEXT in source["text"]
    assert Image.open(io.BytesIO(_stored(app, figure["metadata"]["object_key"]))).width > 64


async def test_a_chart_drawn_as_vectors_is_a_figure_with_its_labels(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, vd.vector_chart_pdf(), "vector.pdf")
    [chart] = _visuals(app, submission.document_id)
    assert (chart["chunk_type"], chart["page"]) == ("image", 1)
    assert vd.VECTOR_CAPTION in chart["content_summary"]
    assert "Blade Reliability" in chart["parent_section"]
    x0, y0, x1, y1 = chart["metadata"]["bbox"]
    assert x0 < 0.2 and x1 > 0.8 and 0.15 < y0 < y1 < 0.6  # the axes and bars, not the page


async def _ingest_watched(
    app: EagleApp,
    kb: str,
    name: str,
    found: Callable[..., Any],
    upsert: Callable[[UpsertBatch], UpsertBatch],
    monkeypatch: pytest.MonkeyPatch,
) -> DocumentRecord:
    """Ingest the report with the extraction's ``_found`` replaced by ``found`` (in its
    thread) and ``upsert`` watching every UPSERT_VECTORS batch first; the document after."""
    monkeypatch.setattr(visual_steps, "_found", found)
    app.bus.subscribe(hooks.upsert_vectors, upsert, plugin="watcher", priority=100)
    try:
        submission = await _ingest(app, kb, vd.report_pdf(), name)
    finally:
        app.bus.unsubscribe_plugin("watcher")
    return app.repositories.documents.get(submission.document_id)


async def test_visuals_are_extracted_while_the_text_is_embedded_and_written(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extraction (one core) runs beside the text's embed and upsert (every core): it is
    still going when the first text rows are written; then its visuals are written too."""
    text_written = threading.Event()
    seen_while_extracting: list[bool] = []
    real_found = visual_steps._found

    def found_after_text(*args: Any) -> Any:
        seen_while_extracting.append(text_written.wait(timeout=30))
        return real_found(*args)

    def note_text(batch: UpsertBatch) -> UpsertBatch:
        if batch.collection == TEXT_COLLECTION:
            text_written.set()
        return batch

    document = await _ingest_watched(
        app, kb, "beside.pdf", found_after_text, note_text, monkeypatch
    )
    assert document.status == "completed", document.error
    assert seen_while_extracting == [True]
    assert [v["chunk_type"] for v in _visuals(app, document.id)] == ["image", "table"]


async def test_a_failed_text_write_stops_the_extraction_and_keeps_its_error(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text side fails while the extraction runs: the extraction stops at its next page,
    stores no picture, and the document fails with the text side's error (not "cancelled")."""
    text_refused = threading.Event()
    real_found = visual_steps._found

    def found_after_failure(*args: Any) -> Any:
        assert text_refused.wait(timeout=30)
        return real_found(*args)

    def refuse_text(batch: UpsertBatch) -> UpsertBatch:
        if batch.collection == TEXT_COLLECTION:
            text_refused.set()
            raise RuntimeError("text store is full")
        return batch

    document = await _ingest_watched(
        app, kb, "text-fails.pdf", found_after_failure, refuse_text, monkeypatch
    )
    assert document.status == "failed" and "text store is full" in (document.error or "")
    assert app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document.id)) == 0
    assert _visuals(app, document.id) == []
    prefix = validate_prefix(app.namespace, kb, document.id, "visuals")
    assert app.objects.list(prefix) == []
