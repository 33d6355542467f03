"""IngestRunRepository on SQLite and PostgreSQL: each ingest step is one atomic transaction."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from eagle_rag.db.database import Database
from eagle_rag.db.repositories import (
    DocumentRepository,
    IngestRunRepository,
    KnowledgeBaseRepository,
    TaskRepository,
)
from eagle_rag.errors import NotFoundError


def _start(runs: IngestRunRepository, task_id: str, owner: str = "worker-1") -> Any:
    return runs.start(task_id, owner=owner, lease_s=30, max_attempts=3)


def _accept(runs: IngestRunRepository, sha: str = "a" * 64, **kw: Any) -> Any:
    fields: dict[str, Any] = {
        "document_id": uuid.uuid4().hex,
        "kb_name": "docs",
        "filename": "a.txt",
        "mime_type": "text/plain",
        "sha256": sha,
        "size": 3,
        "object_key": "core/docs/x/a.txt",
    }
    return runs.accept(**{**fields, **kw})


def _complete(runs: IngestRunRepository, task_id: str, document: Any, **kw: Any) -> list[str]:
    fields: dict[str, Any] = {
        "chunks": 2,
        "collections": ["eagle_text"],
        "kb_collections": [],
        "structure": {"sections": [{"path": "a"}], "pipeline": "knowhere"},
        "pages": None,
        "pipeline": "knowhere",
        "mime_type": "text/plain",
        "note": "completed: 2 vectors",
    }
    return runs.complete(task_id, document, **{**fields, **kw})


def test_accept_records_the_document_its_tags_and_a_queued_task(db: Database, ns: str) -> None:
    KnowledgeBaseRepository(db, ns).create("docs")
    runs = IngestRunRepository(db, ns)
    accepted = _accept(runs, tags=["b", "a", "a"], extra={"year": 2020})
    assert accepted.created and accepted.task is not None
    stored = DocumentRepository(db, ns).get(accepted.document.id)
    assert (stored.status, stored.tags, stored.extra) == ("pending", ("a", "b"), {"year": 2020})
    assert stored.tags == accepted.document.tags and stored.object_key == "core/docs/x/a.txt"
    task = TaskRepository(db, ns).get(accepted.task.id)
    assert (task.status, task.document_id, task.kb_name, task.attempts) == (
        "queued",
        stored.id,
        "docs",
        0,
    )


def test_accept_of_the_same_bytes_is_a_dedup_hit_that_writes_nothing(db: Database, ns: str) -> None:
    KnowledgeBaseRepository(db, ns).create("docs")
    runs = IngestRunRepository(db, ns)
    first = _accept(runs)
    again = _accept(runs, filename="renamed.txt")
    assert not again.created and again.task is None and again.document.id == first.document.id
    assert DocumentRepository(db, ns).count(kb_name="docs") == 1
    assert len(TaskRepository(db, ns).list()) == 1


def test_accept_into_a_missing_kb_writes_nothing(db: Database, ns: str) -> None:
    runs = IngestRunRepository(db, ns)
    with pytest.raises(NotFoundError):
        _accept(runs, kb_name="nowhere")
    assert TaskRepository(db, ns).list() == []


def test_concurrent_accepts_of_one_file_make_one_document_and_one_task(
    db: Database, ns: str
) -> None:
    KnowledgeBaseRepository(db, ns).create("docs")
    workers = 6
    barrier = threading.Barrier(workers)
    outcomes: list[bool] = []

    def upload() -> None:
        runs = IngestRunRepository(db, ns)
        barrier.wait()
        outcomes.append(_accept(runs, sha="f" * 64).created)

    threads = [threading.Thread(target=upload) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == [False] * (workers - 1) + [True]
    assert len(TaskRepository(db, ns).list()) == 1


def test_start_counts_the_attempt_and_reads_document_and_kb(db: Database, ns: str) -> None:
    KnowledgeBaseRepository(db, ns).create("docs", creation_settings={"chunk_size": 128})
    runs = IngestRunRepository(db, ns)
    accepted = _accept(runs, tags=["t"])
    first = _start(runs, accepted.task.id)
    second = _start(runs, accepted.task.id)
    assert (first.attempts, second.attempts) == (1, 2)
    assert second.document is not None and second.kb is not None
    assert (second.document.status, second.document.tags) == ("processing", ("t",))
    assert second.kb.creation_settings == {"chunk_size": 128}
    task = TaskRepository(db, ns).get(accepted.task.id)
    assert (task.status, task.attempts) == ("processing", 2)


def test_start_of_another_namespaces_task_is_not_found(db: Database, ns: str) -> None:
    KnowledgeBaseRepository(db, ns).create("docs")
    accepted = _accept(IngestRunRepository(db, ns))
    with pytest.raises(NotFoundError):
        _start(IngestRunRepository(db, f"{ns}-other"), accepted.task.id)
    assert TaskRepository(db, ns).get(accepted.task.id).attempts == 0


def test_complete_marks_both_and_extends_the_catalog(db: Database, ns: str) -> None:
    kbs = KnowledgeBaseRepository(db, ns)
    kbs.create("docs")
    runs = IngestRunRepository(db, ns)
    accepted = _accept(runs)
    attempt = _start(runs, accepted.task.id)
    assert _complete(runs, accepted.task.id, attempt.document) == []
    document = DocumentRepository(db, ns).get(accepted.document.id)
    assert (document.status, document.chunk_count, document.collections_used) == (
        "completed",
        2,
        ("eagle_text",),
    )
    assert document.structure["sections"] == [{"path": "a"}] and document.pipeline == "knowhere"
    task = TaskRepository(db, ns).get(accepted.task.id)
    assert (task.status, task.phase, task.progress_current, task.progress_total) == (
        "completed",
        "completed",
        2,
        2,
    )
    assert task.log[-1].endswith("completed: 2 vectors")
    assert kbs.get("docs").collections_used == ("eagle_text",)


def test_complete_names_the_older_versions_of_the_file(db: Database, ns: str) -> None:
    KnowledgeBaseRepository(db, ns).create("docs")
    runs = IngestRunRepository(db, ns)
    old = _accept(runs, sha="1" * 64)
    _complete(runs, old.task.id, _start(runs, old.task.id).document)
    pending = _accept(runs, sha="2" * 64)  # same name, never run: not an older version yet
    new = _accept(runs, sha="3" * 64)
    older = _complete(runs, new.task.id, _start(runs, new.task.id).document)
    assert older == [old.document.id]
    assert pending.document.id not in older


def test_a_revert_accepted_while_the_next_version_runs_outranks_it(db: Database, ns: str) -> None:
    """The same bytes as a completed version, under its name, while a later version is still
    running: the completed one becomes the latest upload, so the later one, completing,
    names itself to remove (a later upload completed) and not the reverted one."""
    KnowledgeBaseRepository(db, ns).create("docs")
    runs = IngestRunRepository(db, ns)
    v1 = _accept(runs, sha="1" * 64)
    _complete(runs, v1.task.id, _start(runs, v1.task.id).document)
    v2 = _accept(runs, sha="2" * 64)
    running = _start(runs, v2.task.id).document
    revert = _accept(runs, sha="1" * 64)
    assert not revert.created and revert.document.id == v1.document.id
    assert revert.document.created_at > v2.document.created_at
    assert _complete(runs, v2.task.id, running) == [v2.document.id]
    renamed = _accept(runs, sha="1" * 64, filename="other.txt")  # not a revert of its name
    assert renamed.document.created_at == revert.document.created_at


def test_complete_after_the_document_was_deleted_changes_nothing(db: Database, ns: str) -> None:
    kbs = KnowledgeBaseRepository(db, ns)
    kbs.create("docs")
    runs = IngestRunRepository(db, ns)
    accepted = _accept(runs)
    attempt = _start(runs, accepted.task.id)
    DocumentRepository(db, ns).delete(accepted.document.id)
    with pytest.raises(NotFoundError):
        _complete(runs, accepted.task.id, attempt.document)
    assert kbs.get("docs").collections_used == ()
