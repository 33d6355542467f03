"""Knowledge bases of one namespace."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from eagle_rag.db.records import (
    KnowledgeBaseRecord,
    as_utc,
    validate_json_text,
    validate_kb_name,
)
from eagle_rag.db.repositories.base import NamespacedRepository, new_id, within_kbs
from eagle_rag.db.tables import KnowledgeBaseRow
from eagle_rag.errors import ConflictError, NotFoundError


def kb_record(row: KnowledgeBaseRow | Row[Any]) -> KnowledgeBaseRecord:
    return KnowledgeBaseRecord(
        id=row.id,
        namespace=row.plugin_namespace,
        name=row.name,
        engine=row.engine,
        description=row.description,
        creation_settings=dict(row.creation_settings),
        retrieval_settings=dict(row.retrieval_settings),
        collections_used=tuple(row.collections_used),
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
    )


class KnowledgeBaseRepository(NamespacedRepository):
    """Create, read, update and delete KBs; names are unique within the namespace only."""

    def create(
        self,
        name: str,
        *,
        engine: str = "eagle",
        description: str = "",
        creation_settings: Mapping[str, Any] | None = None,
        retrieval_settings: Mapping[str, Any] | None = None,
    ) -> KnowledgeBaseRecord:
        validate_kb_name(name)
        validate_json_text(dict(creation_settings or {}), "creation_settings")
        validate_json_text(dict(retrieval_settings or {}), "retrieval_settings")
        row = KnowledgeBaseRow(
            id=new_id(),
            plugin_namespace=self.namespace,
            name=name,
            engine=engine,
            description=description,
            creation_settings=dict(creation_settings or {}),
            retrieval_settings=dict(retrieval_settings or {}),
            collections_used=[],
        )
        try:
            with self._db.session() as session:
                session.add(row)
                session.flush()
                return kb_record(row)
        except IntegrityError:
            raise ConflictError(
                f"knowledge base {name!r} already exists", kb_name=name, namespace=self.namespace
            ) from None

    def find(self, name: str) -> KnowledgeBaseRecord | None:
        with self._db.session() as session:
            row = self._row(session, name)
            return kb_record(row) if row else None

    def get(self, name: str) -> KnowledgeBaseRecord:
        found = self.find(name)
        if found is None:
            raise NotFoundError(
                f"knowledge base {name!r} not found", kb_name=name, namespace=self.namespace
            )
        return found

    def list(
        self,
        *,
        names: Collection[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[KnowledgeBaseRecord]:
        """KBs by name; ``names`` (an API key's KBs) filters in the query, before the page."""
        with self._db.session() as session:
            query = (
                select(KnowledgeBaseRow)
                .where(KnowledgeBaseRow.plugin_namespace == self.namespace)
                .order_by(KnowledgeBaseRow.name)
            )
            query = within_kbs(query, KnowledgeBaseRow.name, names)
            rows = session.scalars(query.limit(limit).offset(offset))
            return [kb_record(r) for r in rows]

    def update(
        self,
        name: str,
        *,
        description: str | None = None,
        retrieval_settings: Mapping[str, Any] | None = None,
    ) -> KnowledgeBaseRecord:
        with self._db.session() as session:
            row = self._existing(session, name)
            if description is not None:
                row.description = description
            if retrieval_settings is not None:
                row.retrieval_settings = dict(retrieval_settings)
            session.flush()
            return kb_record(row)

    def add_collections(self, name: str, collections: Iterable[str]) -> KnowledgeBaseRecord:
        """Union new collections into the KB's catalog (ingest success only, ADR-006)."""
        with self._db.session() as session:
            row = self._existing(session, name, lock=True)
            row.collections_used = sorted({*row.collections_used, *collections})
            session.flush()
            return kb_record(row)

    def set_collections(self, name: str, collections: Iterable[str]) -> KnowledgeBaseRecord:
        """Replace the catalog (recomputed after documents are deleted)."""
        with self._db.session() as session:
            row = self._existing(session, name, lock=True)
            row.collections_used = sorted(set(collections))
            session.flush()
            return kb_record(row)

    def delete(self, name: str) -> None:
        with self._db.session() as session:
            session.delete(self._existing(session, name))

    def _row(self, session: Session, name: str, *, lock: bool = False) -> KnowledgeBaseRow | None:
        query = select(KnowledgeBaseRow).where(
            KnowledgeBaseRow.plugin_namespace == self.namespace, KnowledgeBaseRow.name == name
        )
        if lock:
            query = query.with_for_update()
        return session.scalars(query).first()

    def _existing(self, session: Session, name: str, *, lock: bool = False) -> KnowledgeBaseRow:
        row = self._row(session, name, lock=lock)
        if row is None:
            raise NotFoundError(
                f"knowledge base {name!r} not found", kb_name=name, namespace=self.namespace
            )
        return row
