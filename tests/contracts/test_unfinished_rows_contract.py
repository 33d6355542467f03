"""Which documents a search must leave out, on SQLite and PostgreSQL: those that may have rows in
the vector store but are not completed (DocumentRepository.ids_with_unfinished_rows). Every
state is reached through the repositories' own transitions."""

from __future__ import annotations

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
from eagle_rag.ingest.cancel import CANCELLED


@pytest.fixture
def runs(db: Database, ns: str) -> IngestRunRepository:
    for name in ("docs", "other"):
        KnowledgeBaseRepository(db, ns).create(name)
    return IngestRunRepository(db, ns)


def _accept(runs: IngestRunRepository, kb: str = "docs") -> Any:
    accepted = runs.accept(
        document_id=uuid.uuid4().hex,
        kb_name=kb,
        filename=f"{uuid.uuid4().hex}.txt",
        mime_type="text/plain",
        sha256=uuid.uuid4().hex * 2,
        size=3,
        object_key="core/docs/x/a.txt",
    )
    assert accepted.task is not None
    return accepted


def _started(runs: IngestRunRepository, kb: str = "docs") -> Any:
    accepted = _accept(runs, kb)
    attempt = runs.start(accepted.task.id, owner="worker-1", lease_s=30, max_attempts=3)
    assert attempt.outcome == "claimed"
    return accepted


def _complete(runs: IngestRunRepository, accepted: Any) -> None:
    runs.complete(
        accepted.task.id,
        accepted.document,
        chunks=2,
        collections=["eagle_text"],
        kb_collections=[],
        structure={"pipeline": "knowhere"},
        pages=None,
        pipeline="knowhere",
        mime_type="text/plain",
        note="completed: 2 vectors",
    )


def test_documents_that_may_have_rows_but_are_not_completed(
    db: Database, ns: str, runs: IngestRunRepository
) -> None:
    tasks = TaskRepository(db, ns)
    queued = _accept(runs)  # never started: nothing written
    running = _started(runs)
    taken_over = _started(runs)  # a crash's take-over: the dead attempt's rows are still there
    assert runs.requeue(
        taken_over.task.id, note="lease expired", lease_owner=None, lease_until=None
    )
    stopping = _started(runs)  # cancelled mid-run: its worker has not undone its writes yet
    assert tasks.cancel(stopping.task.id, CANCELLED)
    undone = _started(runs)  # ... and one whose worker has
    assert tasks.cancel(undone.task.id, CANCELLED)
    tasks.end_stopped(undone.task.id, owner="worker-1", attempt=1, note="writes undone")
    failed = _started(runs)  # a failure deletes the attempt's rows before it is recorded
    runs.fail(failed.task.id, failed.document.id, "a bad file")
    completed = _started(runs)
    _complete(runs, completed)
    lost = _started(runs)  # completed, then its vectors were lost in a crash: ingested again
    _complete(runs, lost)
    reopened = runs.requeue(
        lost.task.id, note="vectors lost", lease_owner=None, lease_until=None, reopen=True
    )
    assert reopened
    elsewhere = _started(runs, kb="other")

    documents = DocumentRepository(db, ns)
    expected = sorted(a.document.id for a in (running, taken_over, stopping, lost))
    assert documents.ids_with_unfinished_rows(["docs"]) == expected
    assert queued.document.id not in documents.ids_with_unfinished_rows(["docs", "other"])
    assert elsewhere.document.id in documents.ids_with_unfinished_rows(["docs", "other"])
    assert documents.ids_with_unfinished_rows([]) == []
    assert DocumentRepository(db, "another-ns").ids_with_unfinished_rows(["docs"]) == []

    _complete(runs, running)  # the attempt completes: its document is evidence now
    assert running.document.id not in documents.ids_with_unfinished_rows(["docs"])


def test_a_queued_batch_is_never_listed(db: Database, ns: str, runs: IngestRunRepository) -> None:
    for _ in range(50):
        _accept(runs)
    running = _started(runs)
    documents = DocumentRepository(db, ns)
    assert documents.ids_with_unfinished_rows(["docs"]) == [running.document.id]
