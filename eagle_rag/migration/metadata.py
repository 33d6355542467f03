"""Metadata rows of one namespace, table by table, read and written with SQLAlchemy Core.

The tables come from the ORM metadata in dependency order (parents first), so a table another
engineer adds later is carried too, as long as it has a ``plugin_namespace`` column (every
namespaced table has one). Writes insert only the rows whose primary key the target lacks, which
makes a copy idempotent and lets an interrupted one resume.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, func, insert, select, tuple_

from eagle_rag.db.database import Database
from eagle_rag.db.tables import Base

NAMESPACE_COLUMN = "plugin_namespace"
READ_BATCH = 500


def namespaced_tables() -> list[Table]:
    """Every table that holds namespace rows, parents before children: the foreign keys', and
    the knowledge bases first (documents and tasks name theirs without a foreign key)."""
    tables = [t for t in Base.metadata.sorted_tables if NAMESPACE_COLUMN in t.columns]
    return sorted(tables, key=lambda t: t.name != "knowledge_bases")  # stable otherwise


def knowledge_base_ids(db: Database, namespace: str) -> dict[str, str]:
    """The namespace's knowledge bases, name -> id."""
    table = table_named("knowledge_bases")
    statement = select(table.c.name, table.c.id).where(table.c[NAMESPACE_COLUMN] == namespace)
    with db.engine.connect() as connection:
        return {str(name): str(kb_id) for name, kb_id in connection.execute(statement)}


def table_named(name: str) -> Table:
    for table in namespaced_tables():
        if table.name == name:
            return table
    from eagle_rag.errors import InvalidInputError

    raise InvalidInputError(f"unknown metadata table {name!r}", table=name)


def primary_key(table: Table, row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row[column.name] for column in table.primary_key.columns)


def count_rows(db: Database, table: Table, namespace: str) -> int:
    statement = select(func.count()).select_from(table)
    statement = statement.where(table.c[NAMESPACE_COLUMN] == namespace)
    with db.engine.connect() as connection:
        return int(connection.execute(statement).scalar_one())


def read_rows(
    db: Database, table: Table, namespace: str, *, batch: int = READ_BATCH
) -> Iterator[list[dict[str, Any]]]:
    """The namespace's rows in primary-key order, ``batch`` at a time (keyset pagination)."""
    keys = list(table.primary_key.columns)
    last: tuple[Any, ...] | None = None
    while True:
        statement = select(table).where(table.c[NAMESPACE_COLUMN] == namespace)
        if last is not None:
            statement = statement.where(tuple_(*keys) > tuple_(*last))
        statement = statement.order_by(*keys).limit(batch)
        with db.engine.connect() as connection:
            rows = [_portable(dict(r._mapping)) for r in connection.execute(statement)]
        if not rows:
            return
        yield rows
        last = primary_key(table, rows[-1])


def write_missing(db: Database, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert the rows whose primary key is not in the target yet; returns how many."""
    if not rows:
        return 0
    with db.engine.begin() as connection:
        present = _present(connection, table, rows)
        missing = [dict(row) for row in rows if primary_key(table, row) not in present]
        if missing:
            connection.execute(insert(table), [_restore(table, row) for row in missing])
    return len(missing)


def count_present(db: Database, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``rows`` (by primary key) ``db`` holds."""
    if not rows:
        return 0
    with db.engine.connect() as connection:
        return len(_present(connection, table, rows))


def _present(connection: Any, table: Table, rows: Sequence[Mapping[str, Any]]) -> set[Any]:
    keys = list(table.primary_key.columns)
    wanted = [primary_key(table, row) for row in rows]
    statement = select(*keys).where(tuple_(*keys).in_(wanted))
    return {tuple(found) for found in connection.execute(statement)}


def _portable(row: dict[str, Any]) -> dict[str, Any]:
    # SQLite hands back naive datetimes that are UTC; PostgreSQL would read them as local time.
    return {
        key: value.replace(tzinfo=UTC)
        if isinstance(value, datetime) and value.tzinfo is None
        else value
        for key, value in row.items()
    }


def _restore(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """Only the target's columns, with ISO timestamps (from an archive) parsed back."""
    restored: dict[str, Any] = {}
    for column in table.columns:
        if column.name not in row:
            continue
        value = row[column.name]
        if isinstance(value, str) and _is_datetime(column):
            value = datetime.fromisoformat(value)
        restored[column.name] = value
    return restored


def _is_datetime(column: Any) -> bool:
    try:
        return column.type.python_type is datetime
    except NotImplementedError:
        return False
