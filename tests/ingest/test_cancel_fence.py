"""A cancel followed at once by a retry: the cancelled attempt's cleanup must never take the
vectors of the attempt that replaces it (real embedded app: SQLite, Milvus Lite, local store)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import threading
from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import ConflictError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.cancel import CANCELLED, cancel_task
from eagle_rag.ingest.service import Submission
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import TextChunk
from tests.ingest import documents as docs

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _submit(app: EagleApp, kb: str, name: str) -> Submission:
    return await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name=kb,
        filename=name,
        stream=io.BytesIO(docs.MARKDOWN.encode() + name.encode()),
    )


def _vectors(app: EagleApp, document_id: str) -> int:
    return app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document_id))


async def test_a_retry_waits_until_the_cancelled_attempt_has_undone_its_writes(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused: list[ConflictError] = []

    def cancel_then_retry(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        # The API's cancel and, before the attempt has noticed it, a user's retry.
        for task in app.repositories.tasks.list(status="processing"):
            cancel_task(app.repositories.tasks, task.id)
            try:
                app.ingest.retry(task.id)
            except ConflictError as exc:
                refused.append(exc)
        return chunks

    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 0.0)
    app.bus.subscribe(hooks.chunk, cancel_then_retry, plugin="quick-retry", priority=100)
    try:
        submission = await _submit(app, kb, "retried.md")
        await app.queue.join()  # type: ignore[attr-defined]
    finally:
        app.bus.unsubscribe_plugin("quick-retry")
    assert len(refused) == 1, "the retry was accepted while the old attempt still ran"
    assert "still undoing" in refused[0].message
    assert 0 < refused[0].fields["retry_after"] <= app.settings.ingest.lease_s
    task = app.repositories.tasks.get(submission.job_id)
    assert (task.status, task.error) == ("failed", CANCELLED)
    assert task.lease_owner is None and task.lease_expires_at is None  # cleanup ended it
    assert any("its writes were undone" in line for line in task.log)
    assert _vectors(app, submission.document_id) == 0

    # Once the attempt has stopped, the same retry goes through and the document is found.
    app.ingest.retry(submission.job_id)
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed" and document.chunk_count > 0
    assert _vectors(app, document.id) == document.chunk_count


async def test_a_stopped_attempt_leaves_the_vectors_of_the_attempt_that_replaced_it(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old attempt's lease ran out (a slow worker) and a newer attempt took the task over
    and completed while the old one still ran; when the old one stops, the document must keep
    the newer attempt's vectors."""
    replaced: list[Any] = []
    seen: list[str] = []

    async def taken_over(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        if seen:  # the newer attempt's own CHUNK call
            return chunks
        for task in app.repositories.tasks.list(status="processing"):
            seen.append(task.id)
            # What recovery does to an expired lease, then another worker's whole attempt.
            runs = app.repositories.ingest_runs
            assert runs.requeue(task.id, note="lease expired", lease_owner=None, lease_until=None)
            replaced.append(await app.pipeline.run(task.id, owner="another-worker"))
        return chunks

    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 0.0)
    app.bus.subscribe(hooks.chunk, taken_over, plugin="take-over", priority=100)
    try:
        submission = await _submit(app, kb, "taken-over.md")
        await app.queue.join()  # type: ignore[attr-defined]
    finally:
        app.bus.unsubscribe_plugin("take-over")
    assert [r.status for r in replaced] == ["completed"]
    task = app.repositories.tasks.get(submission.job_id)
    assert (task.status, task.attempts) == ("completed", 2)
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed" and document.chunk_count > 0
    assert _vectors(app, document.id) == document.chunk_count
    assert any("a newer attempt holds the document" in line for line in task.log)


VISUAL_PAGES = 80


def _text_pdf(pages: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for number in range(1, pages + 1):
        pdf.add_page()
        line = f"Page {number} of the inspection log: valves, pumps and seals were checked. "
        pdf.multi_cell(0, 8, line * 6)
    return bytes(pdf.output())


def _cancel_during_visuals(app: EagleApp, job_id: str, stop: threading.Event) -> list[int]:
    """The API's cancel, once the task reports its second page of visual extraction."""
    seen: list[int] = []
    while not stop.wait(0.01):
        task = app.repositories.tasks.get(job_id)
        if task.status != "processing":
            return seen
        if task.phase == "visuals" and task.progress_current >= 2:
            seen.append(task.progress_current)
            cancel_task(app.repositories.tasks, job_id)
            return seen
    return seen


async def test_a_cancel_stops_visual_extraction_between_pages(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle_rag.index.collections import VISUAL_COLLECTION
    from eagle_rag.ingest.pixelrag.visuals import visuals_prefix

    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 0.0)
    monkeypatch.setattr(app.settings.ingest, "visual_page_tiles", "all")  # every page rendered
    submission = await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name=kb,
        filename="inspection.pdf",
        stream=io.BytesIO(_text_pdf(VISUAL_PAGES)),
    )
    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        watcher = pool.submit(_cancel_during_visuals, app, submission.job_id, stop)
        try:
            await asyncio.wait_for(app.queue.join(), timeout=300)  # type: ignore[attr-defined]
        finally:
            stop.set()
        cancelled_at = watcher.result()
    assert cancelled_at, "the task never reported visual extraction page by page"
    task = app.repositories.tasks.get(submission.job_id)
    assert (task.status, task.error) == ("failed", CANCELLED)
    # It stopped within a few pages of the request, far from the last page.
    assert task.phase == "failed"
    assert not any(line.startswith("completed") for line in task.log)
    stopped = [line for line in task.log if "stopped" in line]
    assert stopped and "its writes were undone" in stopped[-1]
    assert app.repositories.documents.get(submission.document_id).status == "failed"
    prefix = visuals_prefix(app.namespace, kb, submission.document_id)
    assert app.objects.list(prefix) == []
    assert _vectors(app, submission.document_id) == 0
    visual = app.vectors.count(VISUAL_COLLECTION, f.eq("document_id", submission.document_id))
    assert visual == 0


async def test_the_page_callback_of_visual_extraction_can_stop_it(app: EagleApp) -> None:
    """Visual extraction hides a damaged picture (no visuals), never a cancel."""
    from eagle_rag.ingest.cancel import IngestCancelledError
    from eagle_rag.ingest.detect import PDF
    from eagle_rag.ingest.visual_steps import extract_and_store
    from eagle_rag.plugins.payloads import DocumentSource, ParseResult

    seen: list[tuple[int, int]] = []

    def on_page(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 3:
            raise IngestCancelledError("the ingest was cancelled by request")

    data = _text_pdf(12)
    source = DocumentSource("doc-1", "kb", "log.pdf", PDF, len(data), "0" * 64, "key", {})
    settings = app.settings.ingest.model_copy(update={"visual_page_tiles": "all"})
    with pytest.raises(IngestCancelledError):
        await extract_and_store(
            app.objects, app.namespace, source, data, ParseResult(""), (), settings, on_page=on_page
        )
    assert seen == [(1, 12), (2, 12), (3, 12)]
    assert app.objects.list(f"{app.namespace}/kb/doc-1/") == []


def _tiff(frames: int) -> bytes:
    from tests.ingest import scans

    page = scans.en_page()
    return scans.encode(page, "TIFF", save_all=True, append_images=[page] * (frames - 1))


async def test_visual_extraction_of_a_multi_page_tiff_reports_and_stops_per_frame(
    app: EagleApp,
) -> None:
    from eagle_rag.ingest.cancel import IngestCancelledError
    from eagle_rag.ingest.detect import TIFF
    from eagle_rag.ingest.visual_steps import extract_and_store
    from eagle_rag.plugins.payloads import DocumentSource, ParseResult, TextSection

    data = _tiff(4)
    source = DocumentSource("doc-tiff", "kb", "fax.tif", TIFF, len(data), "0" * 64, "key", {})
    seen: list[tuple[int, int]] = []
    # What OCR read on each frame (a frame with no words gets no tile).
    read = ParseResult("", tuple(TextSection(f"Frame {n} text.", page=n) for n in range(1, 5)))
    stored = await extract_and_store(
        app.objects, app.namespace, source, data, read, (), app.settings.ingest,
        on_page=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [v.page for v in stored] == [1, 2, 3, 4]
    app.objects.delete_prefix(f"{app.namespace}/kb/doc-tiff/")

    def cancel_at_two(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 2:
            raise IngestCancelledError("the ingest was cancelled by request")

    seen.clear()
    source = DocumentSource("doc-tiff2", "kb", "fax.tif", TIFF, len(data), "0" * 64, "key", {})
    with pytest.raises(IngestCancelledError):
        await extract_and_store(
            app.objects, app.namespace, source, data, ParseResult(""), (), app.settings.ingest,
            on_page=cancel_at_two,
        )  # fmt: skip
    assert seen == [(1, 4), (2, 4)]
    assert app.objects.list(f"{app.namespace}/kb/doc-tiff2/") == []


async def test_visual_extraction_of_a_deck_reports_each_slide(app: EagleApp) -> None:
    from eagle_rag.ingest.detect import PPTX
    from eagle_rag.ingest.visual_steps import extract_and_store
    from eagle_rag.plugins.payloads import DocumentSource, ParseResult
    from tests.ingest import visual_docs as vd

    data = vd.deck_pptx()
    source = DocumentSource("doc-deck", "kb", "deck.pptx", PPTX, len(data), "0" * 64, "key", {})
    seen: list[tuple[int, int]] = []
    await extract_and_store(
        app.objects, app.namespace, source, data, ParseResult(""), (), app.settings.ingest,
        on_page=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert seen == [(1, 2), (2, 2)]
