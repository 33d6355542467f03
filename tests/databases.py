"""Real metadata databases for tests: a SQLite file, or a throw-away PostgreSQL database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@contextmanager
def postgres_database() -> Iterator[str]:
    """Create a uniquely named database, yield its URL, drop it afterwards."""
    name = f"eagle_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
