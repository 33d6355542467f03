"""The whole ingest path on the embedded default: submit, queue, pipeline, stores, rollback."""

from __future__ import annotations

import asyncio
import io
import threading
from typing import Any

import docx
import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import (
    BackendUnavailableError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.service import Submission
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import ClassificationDecision, TextChunk, UpsertBatch
from eagle_rag.storage.keys import validate_prefix
from tests.ingest import documents as docs

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _ingest(app: EagleApp, kb: str, data: bytes, name: str, **kw: Any) -> Submission:
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(data), **kw
    )
    await app.queue.join()  # type: ignore[attr-defined]
    return submission


def _vectors(app: EagleApp, document_id: str) -> int:
    return app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document_id))


async def test_markdown_is_ingested_end_to_end(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, docs.MARKDOWN.encode(), "guide.md", tags=["howto"])
    task = app.repositories.tasks.get(submission.job_id)
    assert (task.status, task.phase, task.attempts) == ("completed", "completed", 1)
    assert task.progress_current == task.progress_total > 0
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed" and document.collections_used == ("eagle_text",)
    assert document.chunk_count == _vectors(app, document.id) > 0
    assert [s["path"] for s in document.structure["sections"]][:2] == [
        "Eagle Guide",
        "Eagle Guide/Install",
    ]
    assert document.tags == ("howto",)
    assert app.repositories.knowledge_bases.get(kb).collections_used == ("eagle_text",)
    [[hit]] = app.vectors.search_sparse(
        TEXT_COLLECTION, ["混合检索"], top_k=1, where=f.eq("kb_name", kb)
    )
    assert hit.fields["path"] == "Eagle Guide/检索" and hit.fields["document_id"] == document.id


async def test_chinese_pdf_keeps_pages_and_paths(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, docs.pdf_bytes(chinese=True), "年报.pdf")
    document = app.repositories.documents.get(submission.document_id)
    assert (document.status, document.pages, document.mime_type) == (
        "completed",
        3,
        "application/pdf",
    )
    rows = app.vectors.query(
        TEXT_COLLECTION, f.eq("document_id", document.id) & f.eq("type", "text")
    )
    by_path = {r["path"]: r["page_nums"] for r in rows}
    assert by_path[f"Annual Report/{docs.ZH_TITLE}"] == [1]
    assert by_path[f"Annual Report/{docs.ZH_TITLE}/1.1 范围"] == [2]


async def test_same_bytes_twice_is_a_dedup_hit(app: EagleApp, kb: str) -> None:
    first = await _ingest(app, kb, b"dedup me please", "a.txt")
    second = await _ingest(app, kb, b"dedup me please", "b.txt")
    assert second.dedup_hit and second.document_id == first.document_id
    assert second.job_id == first.job_id
    # the second upload's copy of the original is removed again: one stored file
    assert len(app.objects.list(validate_prefix(app.namespace, kb))) == 1


async def test_a_refused_submission_leaves_no_stored_file(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(**_: Any) -> None:
        raise NotFoundError("knowledge base deleted meanwhile")

    monkeypatch.setattr(app.repositories.ingest_runs, "accept", gone)
    with pytest.raises(NotFoundError):
        await _ingest(app, kb, b"never recorded", "lost.txt")
    assert app.objects.list(validate_prefix(app.namespace, kb)) == []


async def test_upload_to_a_missing_kb_is_refused_and_stores_nothing(app: EagleApp) -> None:
    with pytest.raises(NotFoundError, match="knowledge base"):
        await _ingest(app, "no-such-kb", b"orphan bytes", "orphan.txt")
    assert app.objects.list(validate_prefix(app.namespace, "no-such-kb")) == []


async def test_concurrent_uploads_of_one_file_make_one_document(app: EagleApp, kb: str) -> None:
    data = b"the same bytes, uploaded twice at once"

    def submit(name: str) -> Submission:
        return app.ingest.submit_file(kb_name=kb, filename=name, stream=io.BytesIO(data))

    results = await asyncio.gather(*(asyncio.to_thread(submit, f"f{i}.txt") for i in range(6)))
    await app.queue.join()  # type: ignore[attr-defined]
    assert len({r.document_id for r in results}) == 1
    assert sum(not r.dedup_hit for r in results) == 1
    assert app.repositories.documents.count(kb_name=kb) == 1
    assert len(app.repositories.tasks.list(kb_name=kb)) == 1
    assert len(app.objects.list(validate_prefix(app.namespace, kb))) == 1  # no orphans


async def test_changed_file_with_the_same_name_replaces_the_old_one(app: EagleApp, kb: str) -> None:
    old = await _ingest(app, kb, b"Version one says kangaroo.", "notes.txt")
    new = await _ingest(app, kb, b"Version two says platypus.", "notes.txt")
    assert not new.dedup_hit and new.document_id != old.document_id
    with pytest.raises(NotFoundError):
        app.repositories.documents.get(old.document_id)
    assert _vectors(app, old.document_id) == 0
    where = f.eq("kb_name", kb)
    assert app.vectors.search_sparse(TEXT_COLLECTION, ["kangaroo"], top_k=3, where=where) == [[]]
    [hits] = app.vectors.search_sparse(TEXT_COLLECTION, ["platypus"], top_k=3, where=where)
    assert hits and {h.fields["document_id"] for h in hits} == {new.document_id}


async def test_a_first_version_finishing_after_the_second_does_not_replace_it(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large first upload finished after a small second one of the same name and removed
    it as an "older version": the stale content won and the new upload was gone."""
    first_bytes, second_bytes = b"Version one says kangaroo. " * 40, b"Version two says platypus."
    release = threading.Event()
    succeed = app.pipeline._succeed

    def first_finishes_last(task_id: str, document: Any, done: Any, held: Any) -> Any:
        if document.size == len(first_bytes):
            release.wait(30)
        return succeed(task_id, document, done, held)

    monkeypatch.setattr(app.pipeline, "_succeed", first_finishes_last)
    submit = app.ingest.submit_file
    first = await asyncio.to_thread(
        submit, kb_name=kb, filename="notes.txt", stream=io.BytesIO(first_bytes)
    )
    second = await asyncio.to_thread(
        submit, kb_name=kb, filename="notes.txt", stream=io.BytesIO(second_bytes)
    )
    for _ in range(300):
        if app.repositories.tasks.get(second.job_id).status == "completed":
            break
        await asyncio.sleep(0.1)
    release.set()
    await app.queue.join()  # type: ignore[attr-defined]
    assert app.repositories.documents.get(second.document_id).status == "completed"
    assert _vectors(app, second.document_id) > 0
    with pytest.raises(NotFoundError):
        app.repositories.documents.get(first.document_id)
    assert _vectors(app, first.document_id) == 0


async def test_a_revert_while_the_next_version_ingests_keeps_the_revert(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v1 completed, v2 uploaded, then v1's bytes uploaded again while v2 was still on its way:
    the revert was answered with v1's id (same bytes), then v2 completed and removed v1 as an
    older version, so the id just given out was gone and the KB held the version reverted."""
    v1_bytes, v2_bytes = b"Version one says kangaroo.", b"Version two says platypus."
    v1 = await _ingest(app, kb, v1_bytes, "policy.txt")
    release, held = threading.Event(), threading.Event()
    succeed = app.pipeline._succeed

    def v2_waits(task_id: str, document: Any, done: Any, hold: Any) -> Any:
        if document.size == len(v2_bytes):
            held.set()
            release.wait(30)
        return succeed(task_id, document, done, hold)

    monkeypatch.setattr(app.pipeline, "_succeed", v2_waits)
    submit = app.ingest.submit_file
    v2 = await asyncio.to_thread(
        submit, kb_name=kb, filename="policy.txt", stream=io.BytesIO(v2_bytes)
    )
    assert await asyncio.to_thread(held.wait, 30)
    revert = await asyncio.to_thread(
        submit, kb_name=kb, filename="policy.txt", stream=io.BytesIO(v1_bytes)
    )
    assert revert.dedup_hit and revert.document_id == v1.document_id
    release.set()
    await app.queue.join()  # type: ignore[attr-defined]
    assert app.repositories.documents.get(v1.document_id).status == "completed"
    assert _vectors(app, v1.document_id) > 0
    with pytest.raises(NotFoundError):
        app.repositories.documents.get(v2.document_id)
    assert _vectors(app, v2.document_id) == 0


async def test_failure_rolls_back_vectors_and_catalog_then_retry_succeeds(
    app: EagleApp, kb: str
) -> None:
    calls = {"n": 0}

    def fail_second_batch(batch: UpsertBatch) -> UpsertBatch:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk quota exceeded")
        return batch

    # Below Core's priority: runs after Core wrote the batch, so the first batch is really stored.
    app.bus.subscribe(hooks.upsert_vectors, fail_second_batch, plugin="flaky", priority=-2000)
    try:
        submission = await _ingest(app, kb, docs.MARKDOWN.encode(), "guide.md")
    finally:
        app.bus.unsubscribe_plugin("flaky")
    task = app.repositories.tasks.get(submission.job_id)
    assert task.status == "failed"
    assert "plugin 'flaky' failed in hook UPSERT_VECTORS: disk quota exceeded" in (task.error or "")
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "failed" and document.error == task.error
    assert _vectors(app, submission.document_id) == 0
    assert app.repositories.knowledge_bases.get(kb).collections_used == ()

    await asyncio.to_thread(app.ingest.retry, submission.job_id)
    await app.queue.join()  # type: ignore[attr-defined]
    retried = app.repositories.tasks.get(submission.job_id)
    assert (retried.status, retried.attempts, retried.error) == ("completed", 2, None)
    assert (
        _vectors(app, submission.document_id)
        == app.repositories.documents.get(submission.document_id).chunk_count
    )


async def test_a_completed_task_is_not_retried(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, b"fine text", "ok.txt")
    with pytest.raises(ConflictError, match="completed"):
        app.ingest.retry(submission.job_id)


async def test_running_a_task_twice_leaves_the_same_rows(app: EagleApp, kb: str) -> None:

    submission = await _ingest(app, kb, docs.MARKDOWN.encode(), "guide.md")
    before = sorted(r["id"] for r in app.vectors.query(TEXT_COLLECTION, f.eq("kb_name", kb)))
    # At-least-once: a duplicate delivery of a finished task is skipped, not run again.
    result = await app.pipeline.run(submission.job_id)
    after = sorted(r["id"] for r in app.vectors.query(TEXT_COLLECTION, f.eq("kb_name", kb)))
    assert result.status == "skipped" and before == after
    assert app.repositories.tasks.get(submission.job_id).attempts == 1


async def test_a_chunk_subscriber_may_not_recut_chunks(app: EagleApp, kb: str) -> None:
    def recut(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        return chunks[:1]

    def enrich(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        return chunks  # keeps everything: not the one to blame

    app.bus.subscribe(hooks.chunk, enrich, plugin="tagger", priority=200)
    app.bus.subscribe(hooks.chunk, recut, plugin="cutter", priority=100)
    try:
        submission = await _ingest(app, kb, docs.MARKDOWN.encode(), "guide.md")
    finally:
        app.bus.unsubscribe_plugin("cutter")
        app.bus.unsubscribe_plugin("tagger")
    task = app.repositories.tasks.get(submission.job_id)
    assert task.status == "failed" and "changed chunk ids" in (task.error or "")
    assert "plugin 'cutter' failed in hook CHUNK" in (task.error or "")


class _BrokenLegalParser:
    """A plugin's Parser that claims ``*.legal.json`` and crashes on a corrupt one."""

    name = "legal-json"
    supported_mime_types = ()

    def claims(self, filename: str, data: bytes) -> bool:
        return filename.endswith(".legal.json")

    def parse(self, context: Any) -> Any:
        raise ValueError("unterminated string")


async def test_a_plugin_parser_failure_names_the_plugin_not_core(app: EagleApp, kb: str) -> None:
    app.registries.parsers.register("legal-json", _BrokenLegalParser(), owner="legal")
    try:
        submission = await _ingest(app, kb, b'{"text": "unterminated', "bad.legal.json")
    finally:
        app.registries.parsers.remove_owner("legal")
    error = app.repositories.tasks.get(submission.job_id).error or ""
    assert "plugin 'legal' failed in hook PARSE_DOCUMENT (its parser 'legal-json')" in error
    assert "unterminated string" in error and "'core'" not in error


async def test_a_wrong_result_type_names_the_plugin_that_returned_it(
    app: EagleApp, kb: str
) -> None:
    def upsert(batch: UpsertBatch) -> str:
        return "not an UpsertBatch"

    app.bus.subscribe(hooks.upsert_vectors, upsert, plugin="legal", priority=100)
    try:
        submission = await _ingest(app, kb, docs.MARKDOWN.encode(), "typed.md")
    finally:
        app.bus.unsubscribe_plugin("legal")
    error = app.repositories.tasks.get(submission.job_id).error or ""
    assert error.startswith("plugin 'legal' failed in hook UPSERT_VECTORS: returned a str")


async def test_dimension_mismatch_fails_before_any_write(app: EagleApp, kb: str) -> None:
    from eagle_rag.models.embedders import HashingEncoder

    app.registries.encoders.register("tiny", HashingEncoder(16), owner="dims")
    writes = {"n": 0}

    def count(batch: UpsertBatch) -> None:
        writes["n"] += 1

    app.bus.subscribe(
        hooks.classify_chunk,
        lambda chunk: (ClassificationDecision(TEXT_COLLECTION, "tiny"),),
        plugin="dims",
        priority=100,
    )
    app.bus.subscribe(hooks.upsert_vectors, count, plugin="dims", priority=100)
    try:
        submission = await _ingest(app, kb, b"some text to embed", "a.txt")
    finally:
        app.bus.unsubscribe_plugin("dims")
        app.registries.encoders.remove_owner("dims")
    task = app.repositories.tasks.get(submission.job_id)
    assert "encoder 'tiny' makes 16-d vectors but collection 'eagle_text' stores 384-d" in (
        task.error or ""
    )
    assert writes["n"] == 0


async def test_exclusive_group_writes_a_chunk_once(app: EagleApp, kb: str) -> None:
    text_encoder = app.text_encoder_name
    routes = (
        ClassificationDecision(TEXT_COLLECTION, text_encoder, exclusive_group="text"),
        ClassificationDecision(TEXT_COLLECTION, text_encoder, exclusive_group="text"),
    )
    batches: list[int] = []
    app.bus.subscribe(hooks.classify_chunk, lambda: routes, plugin="dual", priority=100)
    app.bus.subscribe(
        hooks.upsert_vectors,
        lambda batch: batches.append(len(batch.rows)),
        plugin="dual",
        priority=100,
    )
    try:
        submission = await _ingest(app, kb, b"One sentence only.", "one.txt")
    finally:
        app.bus.unsubscribe_plugin("dual")
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed"
    assert sum(batches) == document.chunk_count == _vectors(app, document.id)


async def test_progress_is_visible_while_it_runs(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []

    def watch(chunks: tuple[TextChunk, ...]) -> None:
        task = app.repositories.tasks.for_document(chunks[0].document_id)[-1]
        seen.append((task.status, task.phase))

    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 0.0)  # every step
    app.bus.subscribe(hooks.chunk, watch, plugin="watcher")
    try:
        await _ingest(app, kb, docs.MARKDOWN.encode(), "guide.md")
    finally:
        app.bus.unsubscribe_plugin("watcher")
    assert seen == [("processing", "chunk")]


async def test_a_quick_document_costs_no_progress_writes(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[str] = []
    record = app.repositories.tasks.progress

    def counted(task_id: str, **kw: Any) -> None:
        writes.append(kw["phase"])
        record(task_id, **kw)

    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 60.0)
    monkeypatch.setattr(app.repositories.tasks, "progress", counted)
    submission = await _ingest(app, kb, b"Quokkas smile.", "quokka.txt")
    task = app.repositories.tasks.get(submission.job_id)
    assert writes == []  # throttled: finished within one interval
    assert (task.status, task.phase, task.progress_current, task.progress_total) == (
        "completed",
        "completed",
        1,
        1,
    )


async def test_deleting_a_document_removes_it_everywhere(app: EagleApp, kb: str) -> None:
    from eagle_rag.ingest.deletion import remove_document

    keep = await _ingest(app, kb, b"Koalas sleep a lot.", "keep.txt")
    gone = await _ingest(app, kb, b"Wombats dig burrows.", "gone.txt")
    document = app.repositories.documents.get(gone.document_id)
    await asyncio.to_thread(remove_document, app, gone.document_id)
    assert _vectors(app, gone.document_id) == 0
    assert app.objects.list(validate_prefix(app.namespace, kb, gone.document_id)) == []
    with pytest.raises(NotFoundError):
        app.repositories.tasks.get(gone.job_id)
    where = f.eq("kb_name", kb)
    assert app.vectors.search_sparse(TEXT_COLLECTION, ["wombats"], top_k=5, where=where) == [[]]
    [hits] = app.vectors.search_sparse(TEXT_COLLECTION, ["koalas"], top_k=5, where=where)
    assert hits and {h.fields["document_id"] for h in hits} == {keep.document_id}
    again = await _ingest(app, kb, b"Wombats dig burrows.", "gone.txt")
    assert not again.dedup_hit and again.document_id != document.id  # dedup key released


async def test_deleting_a_kb_removes_all_of_it(app: EagleApp, kb: str) -> None:
    from eagle_rag.ingest.deletion import remove_knowledge_base

    first = await _ingest(app, kb, b"Alpha text.", "a.txt")
    await _ingest(app, kb, b"Beta text.", "b.txt")
    assert await asyncio.to_thread(remove_knowledge_base, app, kb) == 2
    assert app.vectors.count(TEXT_COLLECTION, f.eq("kb_name", kb)) == 0
    assert app.objects.list(validate_prefix(app.namespace, kb)) == []
    assert app.repositories.documents.count(kb_name=kb) == 0
    with pytest.raises(NotFoundError):
        app.repositories.documents.get(first.document_id)
    with pytest.raises(NotFoundError):
        app.repositories.knowledge_bases.get(kb)


@pytest.mark.parametrize(
    ("data", "name", "match"),
    [
        (b"", "empty.txt", "empty"),
        (b"just text", "fake.pdf", "claims to be application/pdf"),
        (b"\x89PNG\r\n\x1a\nxxxx", "photo.png", "the image is corrupt"),
        (b"GIF89a" + b"x" * 32, "anim.gif", "unsupported file type: image/gif"),
        (docs.zip_bomb_docx(), "bomb.docx", "zip bomb"),
        (docs.many_entries_xlsx(50), "many.xlsx", "entries"),
    ],
)
async def test_bad_files_are_refused_at_submit_and_leave_nothing(
    app: EagleApp, kb: str, data: bytes, name: str, match: str
) -> None:
    app.settings.ingest.archive_max_entries = 20
    try:
        with pytest.raises(InvalidInputError, match=match):
            app.ingest.submit_file(kb_name=kb, filename=name, stream=io.BytesIO(data))
    finally:
        app.settings.ingest.archive_max_entries = 10_000
    assert app.repositories.documents.count(kb_name=kb) == 0
    assert app.objects.list(validate_prefix(app.namespace, kb)) == []


async def test_too_large_files_are_refused_while_streaming(app: EagleApp, kb: str) -> None:
    app.settings.ingest.max_file_bytes = 1000
    try:
        with pytest.raises(InvalidInputError, match="larger than the 1000-byte limit"):
            app.ingest.submit_file(kb_name=kb, filename="big.txt", stream=io.BytesIO(b"x" * 5000))
    finally:
        app.settings.ingest.max_file_bytes = 100 * 1024 * 1024


async def test_encrypted_and_corrupt_pdfs_fail_their_task_with_a_reason(
    app: EagleApp, kb: str
) -> None:
    encrypted = await _ingest(app, kb, docs.encrypted_pdf_bytes(), "secret.pdf")
    corrupt = await _ingest(app, kb, docs.pdf_bytes()[:600], "broken.pdf")
    assert "encrypted" in (app.repositories.tasks.get(encrypted.job_id).error or "")
    assert "corrupt" in (app.repositories.tasks.get(corrupt.job_id).error or "")
    assert _vectors(app, encrypted.document_id) == _vectors(app, corrupt.document_id) == 0


async def test_documents_with_nothing_to_index_fail_with_the_reason(app: EagleApp, kb: str) -> None:
    """An empty DOCX or `{}` completed with 0 vectors (a blank text file fails)."""
    buffer = io.BytesIO()
    docx.Document().save(buffer)
    for data, name in ((buffer.getvalue(), "empty.docx"), (b"{}", "empty.json")):
        submission = await _ingest(app, kb, data, name)
        task = app.repositories.tasks.get(submission.job_id)
        assert task.status == "failed" and "nothing to index" in (task.error or ""), task
        assert app.repositories.documents.get(submission.document_id).status == "failed"


async def test_hostile_filenames_are_stored_safely(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, b"harmless", "../../etc/passwd\x00.txt")
    document = app.repositories.documents.get(submission.document_id)
    assert document.filename == "etc/passwd.txt"  # a relative name, never outside anything
    assert document.object_key == f"{app.namespace}/{kb}/{document.id}/passwd.txt"


async def test_long_non_ascii_names_are_stored_within_the_file_systems_bytes(
    app: EagleApp, kb: str
) -> None:
    """90 Chinese characters are 270 bytes: the local store's file name was too long (a 503)."""
    for name in ("报" * 90 + ".md", "é" * 300 + ".txt"):
        submission = await _ingest(app, kb, f"# Long\n\nThe {len(name)} names.\n".encode(), name)
        document = app.repositories.documents.get(submission.document_id)
        stored = (document.object_key or "").rsplit("/", 1)[-1]
        assert len(stored.encode()) <= 200 and stored.endswith(name[-3:])
        assert document.filename == name[-255:]  # the name shown keeps its characters
        assert app.repositories.tasks.get(submission.job_id).status == "completed"


async def test_same_named_files_in_different_folders_are_two_documents(
    app: EagleApp, kb: str
) -> None:
    staging = await _ingest(app, kb, b"staging models", "models/staging/schema.yml")
    marts = await _ingest(app, kb, b"mart models", "models/marts/schema.yml")
    assert staging.document_id != marts.document_id
    names = {d.filename for d in app.repositories.documents.list(kb_name=kb)}
    assert {"models/staging/schema.yml", "models/marts/schema.yml"} <= names


async def test_unknown_kb_and_invalid_names_are_refused(app: EagleApp) -> None:
    with pytest.raises(NotFoundError, match="knowledge base 'missing'"):
        app.ingest.submit_file(kb_name="missing", filename="a.txt", stream=io.BytesIO(b"x"))
    with pytest.raises(InvalidInputError, match="kb_name"):
        app.ingest.submit_file(kb_name="../x", filename="a.txt", stream=io.BytesIO(b"x"))


async def test_url_ingest_end_to_end(app: EagleApp, kb: str) -> None:
    from tests.ingest.test_fetch import _local_site

    with _local_site(b"Remote page about echidnas.") as url:
        with pytest.raises(InvalidInputError, match="refusing to fetch"):
            await asyncio.to_thread(app.ingest.submit_url, kb_name=kb, url=url)
        app.settings.ingest.url_allow_private = True
        try:
            submission = await asyncio.to_thread(app.ingest.submit_url, kb_name=kb, url=url)
        finally:
            app.settings.ingest.url_allow_private = False
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert (document.status, document.filename, document.source_url) == (
        "completed",
        "notes.txt",
        url,
    )


async def test_a_failed_store_write_leaves_no_document_behind(
    app: EagleApp, kb: str, tmp_path: Any
) -> None:
    from dataclasses import replace

    from eagle_rag.ingest.service import IngestService
    from eagle_rag.storage.local import LocalObjectStore

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store expects a folder")
    broken = IngestService(replace(app, objects=LocalObjectStore(blocker)), app.queue)
    with pytest.raises(BackendUnavailableError, match="local object store write failed"):
        broken.submit_file(kb_name=kb, filename="a.txt", stream=io.BytesIO(b"keep me"))
    assert app.repositories.documents.count(kb_name=kb) == 0
    retried = await _ingest(app, kb, b"keep me", "a.txt")
    assert not retried.dedup_hit
    assert app.repositories.documents.get(retried.document_id).status == "completed"


async def _ingest_cancelled_after_chunking(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch, name: str
) -> Any:
    """Ingest a Markdown file that the API's cancel stops between the chunk step and the
    writes: no later check reads it (a 60 s interval), so only the conditional completion
    can see it."""
    from eagle_rag.ingest.cancel import cancel_task

    def cancel_running(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        for task in app.repositories.tasks.list(status="processing"):
            cancel_task(app.repositories.tasks, task.id)
        return chunks

    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 60.0)
    app.bus.subscribe(hooks.chunk, cancel_running, plugin="canceller", priority=100)
    try:
        return await _ingest(app, kb, docs.MARKDOWN.encode(), name)
    finally:
        app.bus.unsubscribe_plugin("canceller")


async def test_a_cancel_the_throttled_check_never_read_still_wins_over_completion(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle_rag.ingest.cancel import CANCELLED

    submission = await _ingest_cancelled_after_chunking(app, kb, monkeypatch, "cancelled.md")
    task = app.repositories.tasks.get(submission.job_id)
    assert (task.status, task.phase, task.error) == ("failed", "failed", CANCELLED)
    document = app.repositories.documents.get(submission.document_id)
    assert (document.status, document.error) == ("failed", CANCELLED)
    assert _vectors(app, document.id) == 0  # the attempt's writes were undone


def _ingests(app: EagleApp, outcome: str) -> float:
    """How many whole ingests this app's metrics counted with ``outcome``."""
    labels = {"phase": "ingest", "outcome": outcome}
    return sum(
        sample.value
        for family in app.stage_metrics.phases.collect()
        for sample in family.samples
        if sample.name == "eagle_ingest_phase_seconds_count" and sample.labels == labels
    )


async def test_the_ingest_phase_metric_counts_each_end_under_its_own_outcome(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = ("ok", "error", "skipped", "stopped")
    before = {outcome: _ingests(app, outcome) for outcome in outcomes}
    done = await _ingest(app, kb, b"plain words to index", "fine.txt")
    failed = await _ingest(app, kb, b"{}", "empty.json")  # fails without raising out of run()
    assert app.repositories.tasks.get(failed.job_id).status == "failed"
    assert (await app.pipeline.run(done.job_id)).status == "skipped"  # a duplicate delivery

    await _ingest_cancelled_after_chunking(app, kb, monkeypatch, "stopped.md")
    counted = {outcome: _ingests(app, outcome) - before[outcome] for outcome in outcomes}
    assert counted == {"ok": 1, "error": 1, "skipped": 1, "stopped": 1}
