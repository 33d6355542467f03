"""Fixtures of the metadata contract tests: every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle_rag.db.database import Database


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'meta' / 'eagle.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    database = Database(url)
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture
def ns() -> str:
    """A fresh namespace per test, so tests sharing one PostgreSQL database never meet."""
    return f"ns-{uuid.uuid4().hex[:10]}"
