"""Chat sessions and their messages, in one namespace."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from eagle_rag.db.records import MessageRecord, SessionRecord, as_utc
from eagle_rag.db.repositories.base import NamespacedRepository, new_id
from eagle_rag.db.tables import ChatSessionRow, MessageRow, utcnow
from eagle_rag.errors import InvalidInputError, NotFoundError

ROLES = ("user", "assistant", "system")


def session_within(kb_names: Iterable[str], allowed: Iterable[str] | None) -> bool:
    """Whether a caller limited to ``allowed`` KBs (None: every KB) may read or continue a
    session over ``kb_names``. An empty ``kb_names`` means the session searched every KB of the
    namespace, so only an unlimited caller may."""
    if allowed is None:
        return True
    names = set(kb_names)
    return bool(names) and names <= set(allowed)


def _session_record(row: ChatSessionRow) -> SessionRecord:
    return SessionRecord(
        id=row.id,
        namespace=row.plugin_namespace,
        title=row.title,
        kb_names=tuple(row.kb_names),
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
    )


def _message_record(row: MessageRow) -> MessageRecord:
    return MessageRecord(
        id=row.id,
        session_id=row.session_id,
        seq=row.seq,
        role=row.role,
        content=row.content,
        sources=dict(row.sources),
        steps=tuple(row.steps),
        created_at=as_utc(row.created_at),
    )


class SessionRepository(NamespacedRepository):
    """Multi-turn sessions: messages keep their sources and steps."""

    def create(self, *, title: str = "", kb_names: Iterable[str] = ()) -> SessionRecord:
        with self._db.session() as session:
            row = ChatSessionRow(
                id=new_id(),
                plugin_namespace=self.namespace,
                title=title[:256],
                kb_names=list(kb_names),
            )
            session.add(row)
            session.flush()
            return _session_record(row)

    def get(self, session_id: str, *, within: Iterable[str] | None = None) -> SessionRecord:
        """The session; one a caller limited to ``within`` KBs may not read
        (``session_within``) is not found, exactly as a missing one is."""
        with self._db.session() as session:
            record = _session_record(self._existing(session, session_id))
        if not session_within(record.kb_names, within):
            raise _not_found(session_id, self.namespace)
        return record

    def list_within(
        self, allowed: Iterable[str] | None, *, limit: int = 100
    ) -> list[SessionRecord]:
        """The ``limit`` most recently active sessions a caller limited to ``allowed`` KBs may
        see (``session_within``). Filtered page by page: filtering one page of everyone's left
        a scoped key none of its own once others had ``limit`` newer ones."""
        found: list[SessionRecord] = []
        offset = 0
        while len(found) < limit:
            page = self.list(limit=limit, offset=offset)
            found += [s for s in page if session_within(s.kb_names, allowed)]
            if len(page) < limit:
                break
            offset += limit
        return found[:limit]

    def list(self, *, limit: int = 100, offset: int = 0) -> list[SessionRecord]:
        """A page of sessions, the most recently active first."""
        with self._db.session() as session:
            query = (
                select(ChatSessionRow)
                .where(ChatSessionRow.plugin_namespace == self.namespace)
                .order_by(ChatSessionRow.updated_at.desc(), ChatSessionRow.id)
                .limit(limit)
                .offset(offset)
            )
            return [_session_record(r) for r in session.scalars(query)]

    def widen(self, session_id: str, kb_names: Iterable[str]) -> None:
        """Add the KBs a later turn searches (none named: every KB) to the session's. What the
        session holds then came from them too, so a caller limited to fewer KBs may no longer
        read it: a wider key continuing a narrow key's session over another KB put that KB's
        answers where the narrow key could read them."""
        with self._db.session() as session:
            row = self._existing(session, session_id, lock=True)
            held, turn = list(row.kb_names), list(kb_names)
            if not held:  # held over every KB already
                return
            widened = list(dict.fromkeys([*held, *turn])) if turn else []
            if widened != held:
                row.kb_names = widened

    def delete(self, session_id: str) -> None:
        with self._db.session() as session:
            row = self._existing(session, session_id)
            session.execute(delete(MessageRow).where(MessageRow.session_id == row.id))
            session.delete(row)

    def add_message(
        self,
        session_id: str,
        *,
        role: str,
        content: str,
        sources: Mapping[str, Any] | None = None,
        steps: Sequence[Any] = (),
    ) -> MessageRecord:
        if role not in ROLES:
            raise InvalidInputError(f"role must be one of {ROLES}", role=role)
        with self._db.session() as session:
            parent = self._existing(session, session_id, lock=True)
            last = session.scalar(
                select(func.max(MessageRow.seq)).where(MessageRow.session_id == parent.id)
            )
            now = utcnow()
            row = MessageRow(
                id=new_id(),
                session_id=parent.id,
                plugin_namespace=self.namespace,
                seq=(last or 0) + 1,
                role=role,
                content=content,
                sources=dict(sources or {}),
                steps=list(steps),
                created_at=now,
            )
            session.add(row)
            parent.title = parent.title or content[:80]
            # Set by hand: the column's onupdate fires only when another column changed, and
            # after the first message the title no longer does. list() orders by this.
            parent.updated_at = now
            session.flush()
            return _message_record(row)

    def messages(self, session_id: str, *, last: int | None = None) -> builtins.list[MessageRecord]:
        """Messages in order; ``last`` keeps only the newest N (bounded history for the model)."""
        with self._db.session() as session:
            parent = self._existing(session, session_id)
            query = select(MessageRow).where(MessageRow.session_id == parent.id)
            if last is not None:
                rows = list(session.scalars(query.order_by(MessageRow.seq.desc()).limit(last)))
                return [_message_record(r) for r in reversed(rows)]
            return [_message_record(r) for r in session.scalars(query.order_by(MessageRow.seq))]

    def questions(self, session_id: str, *, last: int) -> builtins.list[str]:
        """The newest ``last`` user messages' text, oldest first (a follow-up's chain reaches
        further back than the history sent to the model, without reading answers and sources)."""
        with self._db.session() as session:
            parent = self._existing(session, session_id)
            query = (
                select(MessageRow.content)
                .where(MessageRow.session_id == parent.id, MessageRow.role == "user")
                .order_by(MessageRow.seq.desc())
                .limit(last)
            )
            return list(reversed(session.scalars(query).all()))

    def _existing(self, session: Session, session_id: str, *, lock: bool = False) -> ChatSessionRow:
        query = select(ChatSessionRow).where(
            ChatSessionRow.plugin_namespace == self.namespace, ChatSessionRow.id == session_id
        )
        if lock:
            query = query.with_for_update()
        row = session.scalars(query).first()
        if row is None:
            raise _not_found(session_id, self.namespace)
        return row


def _not_found(session_id: str, namespace: str) -> NotFoundError:
    return NotFoundError("session not found", session_id=session_id, namespace=namespace)
