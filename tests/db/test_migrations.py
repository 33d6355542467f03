"""Alembic upgrade from the first released schema (0001) with data in it, on SQLite and
PostgreSQL; then the data read back through today's repositories; and pending migrations."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, insert
from typer.testing import CliRunner

from eagle_rag.cli import app as cli
from eagle_rag.db.database import Database
from eagle_rag.db.repositories.bundle import Repositories
from eagle_rag.errors import ConflictError
from eagle_rag.ingest.leases import stranded
from eagle_rag.probes import probe_database
from eagle_rag.settings import load_settings
from tests.databases import postgres_database

FIRST = "0001"
NS = "core"
LAST_WEEK = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/meta.db"
        return
    with postgres_database() as pg:
        yield pg


def first_schema_rows() -> dict[str, list[dict[str, Any]]]:
    """What a 0001 installation holds: a KB, a finished and a stranded document with their
    tasks, tags, a chat session with messages, a logged MCP call."""
    stamp = {"created_at": LAST_WEEK, "updated_at": LAST_WEEK}
    document = {
        "plugin_namespace": NS,
        "kb_name": "manuals",
        "mime_type": "text/markdown",
        "size": 120,
        "pipeline": "knowhere",
        "source_url": None,
        "error": None,
        "pages": None,
        **stamp,
    }
    task = {"plugin_namespace": NS, "kb_name": "manuals", "error": None, **stamp}
    return {
        "knowledge_bases": [
            {
                "id": "kb1",
                "plugin_namespace": NS,
                "name": "manuals",
                "engine": "core",
                "description": "pump manuals",
                "creation_settings": {"chunk_size": 256},
                "retrieval_settings": {},
                "collections_used": ["eagle_text"],
                **stamp,
            }
        ],
        "documents": [
            {
                **document,
                "id": "d1",
                "filename": "pump.md",
                "sha256": "a" * 64,
                "status": "completed",
                "object_key": "core/manuals/d1",
                "structure": {"title": "Pump"},
                "collections_used": ["eagle_text"],
                "extra": {"year": 2024},
                "chunk_count": 3,
            },
            {
                **document,
                "id": "d2",
                "filename": "valve.md",
                "sha256": "b" * 64,
                "status": "queued",
                "object_key": "core/manuals/d2",
                "structure": {},
                "collections_used": [],
                "extra": {},
                "chunk_count": 0,
            },
        ],
        "document_tags": [{"document_id": "d1", "tag": "pumps", "plugin_namespace": NS}],
        "tasks": [
            {
                **task,
                "id": "t1",
                "document_id": "d1",
                "status": "completed",
                "phase": "done",
                "progress_current": 3,
                "progress_total": 3,
                "attempts": 1,
                "log": ["completed: 3 vectors"],
            },
            {
                **task,
                "id": "t2",
                "document_id": "d2",
                "status": "queued",
                "phase": "queued",
                "progress_current": 0,
                "progress_total": 0,
                "attempts": 0,
                "log": [],
            },
        ],
        "chat_sessions": [
            {"id": "s1", "plugin_namespace": NS, "title": "pumps", "kb_names": ["manuals"], **stamp}
        ],
        "messages": [
            {
                "id": f"m{seq}",
                "session_id": "s1",
                "plugin_namespace": NS,
                "seq": seq,
                "role": role,
                "content": content,
                "sources": [],
                "steps": [],
                "created_at": LAST_WEEK + timedelta(seconds=seq),
            }
            for seq, (role, content) in enumerate(
                [("user", "How is the pump primed?"), ("assistant", "Fill it first [1].")]
            )
        ],
        "mcp_calls": [
            {
                "id": "c1",
                "plugin_namespace": NS,
                "tool": "core_retrieve",
                "arguments": {"query": "pump"},
                "status": "ok",
                "duration_ms": 12.5,
                "error": None,
                "created_at": LAST_WEEK,
            }
        ],
    }


def fill_first_schema(database: Database) -> None:
    """Insert through the 0001 tables as the database has them (reflected, not today's)."""
    tables = MetaData()
    tables.reflect(database.engine)
    with database.engine.begin() as connection:
        for name, rows in first_schema_rows().items():
            connection.execute(insert(tables.tables[name]), rows)


def test_upgrade_from_the_first_schema_keeps_every_row(url: str) -> None:
    database = Database(url)
    try:
        assert database.migrate(FIRST) == FIRST
        assert database.pending() == ("0002",)
        fill_first_schema(database)
        assert database.migrate() == "0002"
        assert database.pending() == ()
        assert database.migrate() == "0002"  # again: nothing to do, nothing lost
        check_data_after_upgrade(Repositories.for_namespace(database, NS))
    finally:
        database.dispose()


def check_data_after_upgrade(repos: Repositories) -> None:
    kb = repos.knowledge_bases.get("manuals")
    assert (kb.description, kb.engine) == ("pump manuals", "core")
    assert kb.creation_settings == {"chunk_size": 256}
    done = repos.documents.get("d1")
    assert (done.status, done.chunk_count, done.extra) == ("completed", 3, {"year": 2024})
    assert repos.documents.ids_with_tags(["pumps"]) == ["d1"]
    finished = repos.tasks.get("t1")
    assert finished.status == "completed" and finished.lease_expires_at is None
    # 0002 gives a task left queued by a lease-less version an expired lease: recovery runs it.
    waiting = repos.tasks.get("t2")
    assert waiting.lease_expires_at == waiting.updated_at == LAST_WEEK
    assert stranded(waiting)
    assert repos.tasks.count_by_status() == {"completed": 1, "queued": 1}
    assert [m.content for m in repos.sessions.messages("s1")] == [
        "How is the pump primed?",
        "Fill it first [1].",
    ]
    assert repos.tasks.unflushed() == []  # rows from before leases count as flushed


def test_doctor_and_db_status_report_a_pending_migration(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/meta.db"
    database = Database(url)
    database.migrate(FIRST)
    database.dispose()
    settings = load_settings({"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_DATABASE_URL": url})
    assert settings.database.url == url
    probe = probe_database(settings)
    assert probe.status == "ok"
    assert "schema 0001, 1 migration pending (0002)" in probe.version
    assert "eagle-rag db upgrade" in probe.version

    env = {**os.environ, "EAGLE_DATA_DIR": str(tmp_path), "EAGLE_DATABASE_URL": url}
    runner = CliRunner()
    status = runner.invoke(cli, ["db", "status", "--json"], env=env)
    assert status.exit_code == 1, status.output
    assert json.loads(status.output) == {
        "database": url,
        "revision": "0001",
        "pending": ["0002"],
    }
    upgraded = runner.invoke(cli, ["db", "upgrade"], env=env)
    assert upgraded.exit_code == 0 and "applied 0002: schema 0002" in upgraded.output
    assert runner.invoke(cli, ["db", "status"], env=env).exit_code == 0
    assert "(up to date)" in probe_database(settings).version


def test_an_empty_database_has_every_migration_pending(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path}/empty.db")
    try:
        assert database.schema_state() == ("", ("0001", "0002"))
    finally:
        database.dispose()


def test_a_schema_newer_than_this_release_is_refused_clearly(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path}/meta.db")
    try:
        database.migrate()
        with database.engine.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0099'")
        with pytest.raises(ConflictError, match="0099"):
            database.pending()
    finally:
        database.dispose()


def test_a_database_that_cannot_be_written_is_unavailable_with_its_cause(tmp_path: Path) -> None:
    """A read-only data dir: the start (which migrates) failed with the driver's traceback."""
    import sqlite3

    from eagle_rag.errors import BackendUnavailableError

    sqlite3.connect(tmp_path / "meta.db").close()  # an empty database file, opened read-only
    read_only = Database(f"sqlite:///file:{tmp_path}/meta.db?mode=ro&uri=true")
    with pytest.raises(BackendUnavailableError) as refused:
        read_only.migrate()
    assert refused.value.message == (
        "metadata database unavailable: attempt to write a readonly database"
    )
    assert refused.value.fields == {"backend": "sqlite"}
