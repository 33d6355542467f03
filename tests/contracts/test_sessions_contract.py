"""Conversations on SQLite and PostgreSQL: a new message makes its conversation the newest."""

from __future__ import annotations

from eagle_rag.db.database import Database
from eagle_rag.db.repositories import SessionRepository


def test_a_message_bumps_its_session_to_the_top_of_the_list(db: Database, ns: str) -> None:
    sessions = SessionRepository(db, ns)
    older = sessions.create(title="older")
    newer = sessions.create(title="newer")
    assert [s.id for s in sessions.list()] == [newer.id, older.id]

    message = sessions.add_message(older.id, role="user", content="How do I prime the pump?")

    bumped = sessions.get(older.id)
    assert bumped.updated_at > older.updated_at
    assert bumped.updated_at > newer.updated_at
    assert bumped.updated_at == message.created_at  # one clock reading for both rows
    assert bumped.created_at == older.created_at
    assert [s.id for s in sessions.list()] == [older.id, newer.id]
    assert sessions.get(newer.id).updated_at == newer.updated_at  # the other one is untouched
