"""The metadata port on every backend: SQLite and PostgreSQL, through the real repositories."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from eagle_rag.db.database import Database
from eagle_rag.db.repositories import (
    DocumentRepository,
    IngestRunRepository,
    KnowledgeBaseRepository,
    McpCallRepository,
    SessionRepository,
    TaskRepository,
)
from eagle_rag.db.repositories.tasks import LOG_LINES_KEPT
from eagle_rag.db.tables import Base
from eagle_rag.errors import (
    BackendUnavailableError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)


def _start(runs: IngestRunRepository, task_id: str, owner: str = "worker-1") -> Any:
    return runs.start(task_id, owner=owner, lease_s=30, max_attempts=3)


def _kb(db: Database, ns: str, name: str = "docs") -> KnowledgeBaseRepository:
    repo = KnowledgeBaseRepository(db, ns)
    repo.create(name)
    return repo


def _doc(db: Database, ns: str, sha: str = "a" * 64, kb: str = "docs", **kw: object) -> str:
    record, created = DocumentRepository(db, ns).create(
        kb_name=kb, filename="a.pdf", mime_type="application/pdf", sha256=sha, size=10, **kw
    )
    assert created
    return record.id


# --- schema -----------------------------------------------------------------------------------


def test_migrations_build_exactly_the_models_schema(db: Database) -> None:
    with db.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []
    assert db.migrate() == "0002"  # idempotent


# --- knowledge bases --------------------------------------------------------------------------


def test_kb_crud(db: Database, ns: str) -> None:
    repo = KnowledgeBaseRepository(db, ns)
    created = repo.create("finance", description="Q reports", creation_settings={"chunk_size": 400})
    assert created.engine == "eagle" and created.namespace == ns
    assert repo.get("finance").creation_settings == {"chunk_size": 400}
    updated = repo.update("finance", description="new", retrieval_settings={"top_k": 8})
    assert (updated.description, updated.retrieval_settings) == ("new", {"top_k": 8})
    assert [k.name for k in repo.list()] == ["finance"]
    repo.delete("finance")
    assert repo.find("finance") is None
    with pytest.raises(NotFoundError):
        repo.delete("finance")


def test_duplicate_kb_is_a_conflict(db: Database, ns: str) -> None:
    repo = _kb(db, ns)
    with pytest.raises(ConflictError, match="already exists"):
        repo.create("docs")


@pytest.mark.parametrize(
    "name",
    ["", "Docs", "../x", "a" * 65, "kb;drop table", "中文", "-lead", "a b", "x\x00", "docs\n"],
)
def test_hostile_kb_names_are_refused(db: Database, ns: str, name: str) -> None:
    with pytest.raises(InvalidInputError, match="kb_name"):
        KnowledgeBaseRepository(db, ns).create(name)


def test_kb_collections_catalog_is_a_sorted_union(db: Database, ns: str) -> None:
    repo = _kb(db, ns)
    repo.add_collections("docs", ["eagle_text"])
    repo.add_collections("docs", ["eagle_visual", "eagle_text"])
    assert repo.get("docs").collections_used == ("eagle_text", "eagle_visual")
    assert repo.set_collections("docs", []).collections_used == ()


# --- isolation --------------------------------------------------------------------------------


def test_same_kb_name_in_two_namespaces_never_collides(db: Database, ns: str) -> None:
    other = ns + "-b"
    _kb(db, ns)
    _kb(db, other)
    mine = _doc(db, ns, sha="1" * 64)
    theirs = _doc(db, other, sha="1" * 64)  # same bytes, same kb name: still a new document
    assert mine != theirs
    documents = DocumentRepository(db, ns)
    assert [d.id for d in documents.list(kb_name="docs")] == [mine]
    for act in (
        lambda: documents.get(theirs),
        lambda: documents.update(theirs, status="failed"),
        lambda: documents.set_fields(theirs, status="failed"),
        lambda: documents.delete(theirs),
        lambda: TaskRepository(db, ns).create(document_id=theirs),
    ):
        with pytest.raises(NotFoundError):
            act()
    KnowledgeBaseRepository(db, ns).delete("docs")
    assert KnowledgeBaseRepository(db, other).get("docs").name == "docs"


def test_tasks_sessions_and_calls_are_namespaced(db: Database, ns: str) -> None:
    other = ns + "-b"
    _kb(db, ns)
    task = TaskRepository(db, ns).create(document_id=_doc(db, ns))
    session = SessionRepository(db, ns).create(title="t")
    McpCallRepository(db, ns).record(tool="core_query", arguments={}, status="ok", duration_ms=1)
    with pytest.raises(NotFoundError):
        TaskRepository(db, other).get(task.id)
    with pytest.raises(NotFoundError):
        SessionRepository(db, other).add_message(session.id, role="user", content="x")
    assert TaskRepository(db, other).list() == []
    assert SessionRepository(db, other).list() == []
    assert McpCallRepository(db, other).recent() == []


# --- documents and dedup ----------------------------------------------------------------------


def test_dedup_hit_returns_the_existing_document(db: Database, ns: str) -> None:
    _kb(db, ns)
    first = _doc(db, ns)
    again, created = DocumentRepository(db, ns).create(
        kb_name="docs", filename="copy.pdf", mime_type="application/pdf", sha256="a" * 64, size=10
    )
    assert not created and again.id == first and again.filename == "a.pdf"


def test_same_bytes_in_another_kb_is_a_new_document(db: Database, ns: str) -> None:
    _kb(db, ns)
    KnowledgeBaseRepository(db, ns).create("other")
    assert _doc(db, ns) != _doc(db, ns, kb="other")


def test_concurrent_uploads_of_one_file_make_one_document(db: Database, ns: str) -> None:
    _kb(db, ns)
    workers = 8
    barrier = threading.Barrier(workers)
    outcomes: list[tuple[str, bool]] = []
    errors: list[BaseException] = []

    def upload(i: int) -> None:
        repo = DocumentRepository(db, ns)
        barrier.wait()
        try:
            record, created = repo.create(
                kb_name="docs", filename=f"f{i}.pdf", mime_type="x", sha256="f" * 64, size=1
            )
            outcomes.append((record.id, created))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(created for _, created in outcomes) == 1
    assert len({doc_id for doc_id, _ in outcomes}) == 1
    assert DocumentRepository(db, ns).count(kb_name="docs") == 1


def test_document_in_missing_kb_is_refused(db: Database, ns: str) -> None:
    with pytest.raises(NotFoundError, match="knowledge base 'nope'"):
        DocumentRepository(db, ns).create(
            kb_name="nope", filename="a", mime_type="x", sha256="0", size=1
        )


def test_document_update_and_delete_release_the_dedup_key(db: Database, ns: str) -> None:
    _kb(db, ns)
    documents = DocumentRepository(db, ns)
    doc_id = _doc(db, ns, tags=["q3", "finance"])
    done = documents.update(
        doc_id, status="completed", pages=4, collections_used=["eagle_text"], chunk_count=12
    )
    assert (done.status, done.pages, done.chunk_count) == ("completed", 4, 12)
    assert done.tags == ("finance", "q3")
    assert documents.collections_used(kb_name="docs") == {"eagle_text"}
    with pytest.raises(InvalidInputError):
        documents.update(doc_id, sha256="x")
    with pytest.raises(InvalidInputError):
        documents.update(doc_id, status="exploded")
    documents.set_fields(doc_id, error="late note", chunk_count=13)
    assert (documents.get(doc_id).error, documents.get(doc_id).chunk_count) == ("late note", 13)
    with pytest.raises(InvalidInputError):
        documents.set_fields(doc_id, kb_name="elsewhere")
    documents.delete(doc_id)
    assert documents.find(doc_id) is None
    assert _doc(db, ns) != doc_id  # the same bytes can be ingested again


def test_document_listing_filters_and_pages(db: Database, ns: str) -> None:
    _kb(db, ns)
    ids = [_doc(db, ns, sha=str(i) * 64, tags=["even"] if i % 2 == 0 else []) for i in range(5)]
    documents = DocumentRepository(db, ns)
    documents.update(ids[0], status="failed", error="corrupt PDF")
    assert [d.id for d in documents.list(kb_name="docs", limit=2, offset=1)] == ids[1:3]
    assert [d.id for d in documents.list(status="failed")] == [ids[0]]
    assert [d.id for d in documents.list(tag="even")] == [ids[0], ids[2], ids[4]]
    assert documents.ids_with_tags(["even"], kb_names=["docs"]) == sorted([ids[0], ids[2], ids[4]])
    assert documents.count(kb_name="docs") == 5
    assert sorted(documents.ids_in_kb("docs")) == sorted(ids)
    assert documents.ids_in_kb("docs", status="failed") == [ids[0]]
    by_name = {d.id: d.status for d in documents.list(filename="a.pdf")}
    assert sorted(by_name) == sorted(ids) and by_name[ids[0]] == "failed"
    with pytest.raises(InvalidInputError):
        documents.list(limit=0)


@pytest.mark.parametrize("tag", ["", "a" * 70, "bad\x00tag", "semi;colon", "draft\n"])
def test_hostile_tags_are_refused(db: Database, ns: str, tag: str) -> None:
    _kb(db, ns)
    with pytest.raises(InvalidInputError, match="tag"):
        _doc(db, ns, tags=[tag])


def test_hostile_filter_values_find_nothing_and_break_nothing(db: Database, ns: str) -> None:
    _kb(db, ns)
    _doc(db, ns)
    documents = DocumentRepository(db, ns)
    for value in ("' OR '1'='1", '"; DROP TABLE documents; --', "a\\b", "%", "_"):
        assert documents.list(kb_name="docs", filename=value) == []
        assert documents.find_by_sha("docs", value) is None
    assert documents.count(kb_name="docs") == 1


# --- tasks ------------------------------------------------------------------------------------


def test_task_lifecycle(db: Database, ns: str) -> None:
    _kb(db, ns)
    tasks = TaskRepository(db, ns)
    task = tasks.create(document_id=_doc(db, ns))
    assert (task.status, task.phase, task.attempts, task.kb_name) == ("queued", "queued", 0, "docs")
    runs = IngestRunRepository(db, ns)
    assert _start(runs, task.id).attempts == 1
    tasks.progress(task.id, phase="embed", current=3, total=10)
    running = tasks.get(task.id)
    assert (running.status, running.phase, running.progress_current, running.progress_total) == (
        "processing",
        "embed",
        3,
        10,
    )
    failed = tasks.finish(task.id, status="failed", error="embedder timed out")
    assert (failed.status, failed.error) == ("failed", "embedder timed out")
    assert _start(runs, task.id).outcome == "skipped"  # a finished task never runs again
    assert runs.requeue(task.id, note="retry", lease_owner=None, lease_until=None)
    assert _start(runs, task.id).attempts == 2
    retried = tasks.get(task.id)
    assert (retried.attempts, retried.error, retried.status) == (2, None, "processing")
    assert [t.id for t in tasks.list(status="processing")] == [task.id]
    assert [t.id for t in tasks.for_document(task.document_id)] == [task.id]
    with pytest.raises(InvalidInputError):
        tasks.finish(task.id, status="exploded")


def test_task_log_is_bounded(db: Database, ns: str) -> None:
    _kb(db, ns)
    tasks = TaskRepository(db, ns)
    task = tasks.create(document_id=_doc(db, ns))
    for i in range(LOG_LINES_KEPT + 5):
        tasks.append_log(task.id, f"line {i}")
    log = tasks.get(task.id).log
    assert len(log) == LOG_LINES_KEPT and log[-1].endswith(f"line {LOG_LINES_KEPT + 4}")


# --- sessions and MCP calls -------------------------------------------------------------------


def test_session_messages_keep_order_sources_and_steps(db: Database, ns: str) -> None:
    sessions = SessionRepository(db, ns)
    session = sessions.create(kb_names=["docs"])
    sessions.add_message(session.id, role="user", content="What is RRF?")
    sessions.add_message(
        session.id,
        role="assistant",
        content="Reciprocal rank fusion [1].",
        sources={"text": [{"index": 1}]},
        steps=[{"name": "rerank"}],
    )
    sessions.add_message(session.id, role="user", content="And k?")
    history = sessions.messages(session.id)
    assert [m.seq for m in history] == [1, 2, 3]
    assert history[1].sources == {"text": [{"index": 1}]}
    assert [m.content for m in sessions.messages(session.id, last=2)] == [
        "Reciprocal rank fusion [1].",
        "And k?",
    ]
    assert sessions.get(session.id).title == "What is RRF?"
    with pytest.raises(InvalidInputError):
        sessions.add_message(session.id, role="tool", content="x")
    sessions.delete(session.id)
    with pytest.raises(NotFoundError):
        sessions.messages(session.id)


def test_mcp_call_log(db: Database, ns: str) -> None:
    calls = McpCallRepository(db, ns)
    calls.record(tool="core_query", arguments={"query": "q"}, status="ok", duration_ms=12.5)
    calls.record(tool="core_ingest", arguments={}, status="error", duration_ms=3, error="bad url")
    recent = calls.recent(limit=10)
    assert {c.tool for c in recent} == {"core_query", "core_ingest"}
    assert next(c for c in recent if c.status == "error").error == "bad url"


def test_unreachable_database_is_a_backend_error() -> None:
    database = Database("postgresql+psycopg://postgres@127.0.0.1:1/none")
    with pytest.raises(BackendUnavailableError):
        database.health()
    with pytest.raises(BackendUnavailableError):
        KnowledgeBaseRepository(database, "core").list()
