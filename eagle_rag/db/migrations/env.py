"""Alembic environment: runs on the connection Database.migrate() hands over."""

from __future__ import annotations

from alembic import context

from eagle_rag.db.tables import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through eagle_rag.db.database.Database.migrate()")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite can only ALTER through table copies
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
