"""Metadata: SQLAlchemy tables, namespace-forcing repositories, migrations (SQLite / PostgreSQL)."""
