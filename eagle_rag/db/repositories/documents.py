"""Documents of one namespace, with their tags and the dedup key ``(sha256, kb, namespace)``."""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, delete, func, select, union_all
from sqlalchemy import update as sa_update
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from eagle_rag.db.records import (
    DOCUMENT_STATUSES,
    DocumentRecord,
    as_utc,
    validate_json_text,
    validate_kb_name,
    validate_tag,
)
from eagle_rag.db.repositories.base import NamespacedRepository, new_id, within_kbs
from eagle_rag.db.tables import DocumentRow, DocumentTagRow, KnowledgeBaseRow, TaskRow, utcnow
from eagle_rag.errors import InvalidInputError, NotFoundError

# Fields the pipeline may change after creation; identity and dedup fields are fixed.
UPDATABLE = frozenset(
    {
        "status",
        "pages",
        "pipeline",
        "object_key",
        "structure",
        "collections_used",
        "extra",
        "chunk_count",
        "error",
        "mime_type",
    }
)
MAX_PAGE = 500

# Tasks whose document may have rows in the vector store: an attempt runs (or ran and died);
# an attempt ran and the task is queued again (recovery's take-over after a crash, a transient
# failure's retry, a completed document whose vectors a crash lost); or a cancel stopped a
# running attempt that has not undone its writes yet (the cancel leaves it its lease until it
# has). A task never started (attempts 0) has written nothing: a queued batch is not here.
# One branch each, so each reads its own range of a tasks index (ns, status[, lease expiry]);
# an OR of them let SQLite read every task of the namespace.
_MAY_HAVE_ROWS = (
    (TaskRow.status == "processing",),
    (TaskRow.status == "queued", TaskRow.attempts > 0),
    (TaskRow.status == "failed", TaskRow.lease_expires_at.is_not(None)),
)
_STARTED_TASKS = union_all(
    *(
        select(TaskRow.document_id).where(
            TaskRow.plugin_namespace == bindparam("ns"),
            TaskRow.kb_name.in_(bindparam("kbs", expanding=True)),
            *branch,
        )
        for branch in _MAY_HAVE_ROWS
    )
).subquery()
# Built once: this runs on every search, and building it cost more than running it.
_UNFINISHED_WITH_ROWS = (
    select(DocumentRow.id)
    .join(_STARTED_TASKS, DocumentRow.id == _STARTED_TASKS.c.document_id)
    .where(DocumentRow.status != "completed")
    .distinct()
)


def _check_fields(fields: Mapping[str, Any]) -> None:
    unknown = set(fields) - UPDATABLE
    if unknown:
        raise InvalidInputError(f"documents cannot update {sorted(unknown)}")
    if "status" in fields and fields["status"] not in DOCUMENT_STATUSES:
        raise InvalidInputError(f"unknown document status {fields['status']!r}")


def document_record(row: DocumentRow | Row[Any], tags: Sequence[str]) -> DocumentRecord:
    return DocumentRecord(
        id=row.id,
        namespace=row.plugin_namespace,
        kb_name=row.kb_name,
        filename=row.filename,
        mime_type=row.mime_type,
        sha256=row.sha256,
        size=row.size,
        status=row.status,
        pages=row.pages,
        pipeline=row.pipeline,
        object_key=row.object_key,
        source_url=row.source_url,
        structure=dict(row.structure),
        collections_used=tuple(row.collections_used),
        extra=dict(row.extra),
        chunk_count=row.chunk_count,
        error=row.error,
        tags=tuple(sorted(tags)),
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
    )


class DocumentRepository(NamespacedRepository):
    """The document catalog. ``create`` is the dedup point: same bytes in a KB -> same row."""

    def create(
        self,
        *,
        kb_name: str,
        filename: str,
        mime_type: str,
        sha256: str,
        size: int,
        document_id: str | None = None,
        object_key: str | None = None,
        source_url: str | None = None,
        extra: Mapping[str, Any] | None = None,
        tags: Iterable[str] = (),
    ) -> tuple[DocumentRecord, bool]:
        """Insert a pending document; on a dedup hit return the existing one and ``False``."""
        validate_kb_name(kb_name)
        validate_json_text(dict(extra or {}), "metadata")
        tag_list = sorted({validate_tag(t) for t in tags})
        row = DocumentRow(
            id=document_id or new_id(),
            plugin_namespace=self.namespace,
            kb_name=kb_name,
            filename=filename,
            mime_type=mime_type,
            sha256=sha256,
            size=size,
            status="pending",
            object_key=object_key,
            source_url=source_url,
            structure={},
            collections_used=[],
            extra=dict(extra or {}),
            chunk_count=0,
        )
        try:
            with self._db.session() as session:
                self._require_kb(session, kb_name)
                session.add(row)
                session.flush()  # the unique constraint decides races here, not a prior SELECT
                session.add_all(
                    DocumentTagRow(document_id=row.id, tag=t, plugin_namespace=self.namespace)
                    for t in tag_list
                )
                return document_record(row, tag_list), True
        except IntegrityError:
            existing = self.find_by_sha(kb_name, sha256)
            if existing is None:
                raise
            return existing, False

    def get(self, document_id: str, *, within: Collection[str] | None = None) -> DocumentRecord:
        """The document; one outside the ``within`` KBs (an API key's; None: every KB) is not
        found, exactly as a missing one is: a refusal would confirm the id and name its KB."""
        with self._db.session() as session:
            row = self._existing(session, document_id, within)
            return document_record(row, self._tags(session, [row.id]).get(row.id, []))

    def find(self, document_id: str) -> DocumentRecord | None:
        try:
            return self.get(document_id)
        except NotFoundError:
            return None

    def find_by_sha(self, kb_name: str, sha256: str) -> DocumentRecord | None:
        return self._first(DocumentRow.kb_name == kb_name, DocumentRow.sha256 == sha256)

    def list(
        self,
        *,
        kb_name: str | None = None,
        status: str | None = None,
        tag: str | None = None,
        filename: str | None = None,
        limit: int = 100,
        offset: int = 0,
        kb_names: Collection[str] | None = None,
    ) -> list[DocumentRecord]:
        """A page of documents; ``kb_names`` (an API key's KBs) filters before the page."""
        if not 1 <= limit <= MAX_PAGE or offset < 0:
            raise InvalidInputError(f"limit must be 1..{MAX_PAGE} and offset >= 0")
        with self._db.session() as session:
            query = self._scoped(kb_name, status, tag, filename).order_by(
                DocumentRow.created_at, DocumentRow.id
            )
            query = within_kbs(query, DocumentRow.kb_name, kb_names)
            rows = list(session.scalars(query.limit(limit).offset(offset)))
            tags = self._tags(session, [r.id for r in rows])
            return [document_record(r, tags.get(r.id, [])) for r in rows]

    def count(self, *, kb_name: str | None = None, status: str | None = None) -> int:
        with self._db.session() as session:
            query = self._scoped(kb_name, status, None, None).subquery()
            return int(session.scalar(select(func.count()).select_from(query)) or 0)

    def update(self, document_id: str, **fields: Any) -> DocumentRecord:
        _check_fields(fields)
        with self._db.session() as session:
            row = self._existing(session, document_id)
            for name, value in fields.items():
                setattr(row, name, list(value) if name == "collections_used" else value)
            session.flush()
            return document_record(row, self._tags(session, [row.id]).get(row.id, []))

    def set_fields(self, document_id: str, **fields: Any) -> None:
        """Like ``update`` without reading the record back: one UPDATE (the ingest hot path)."""
        _check_fields(fields)
        values = {k: list(v) if k == "collections_used" else v for k, v in fields.items()}
        with self._db.session() as session:
            result = session.execute(
                sa_update(DocumentRow)
                .where(
                    DocumentRow.plugin_namespace == self.namespace, DocumentRow.id == document_id
                )
                .values(**values, updated_at=utcnow())
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NotFoundError(
                    "document not found", document_id=document_id, namespace=self.namespace
                )

    def delete(self, document_id: str) -> None:
        """Remove the row, its tags and so its dedup key; the caller removes vectors and objects."""
        with self._db.session() as session:
            row = self._existing(session, document_id)
            session.execute(delete(DocumentTagRow).where(DocumentTagRow.document_id == row.id))
            session.delete(row)

    def filenames(self, document_ids: Iterable[str]) -> dict[str, str]:
        """Filename of each of these documents that exists in the namespace (for citations)."""
        ids = list(dict.fromkeys(document_ids))
        if not ids:
            return {}
        with self._db.session() as session:
            query = select(DocumentRow.id, DocumentRow.filename).where(
                DocumentRow.plugin_namespace == self.namespace, DocumentRow.id.in_(ids)
            )
            return {row.id: row.filename for row in session.execute(query)}

    def inventory(self) -> builtins.list[DocumentRecord]:
        """Every document of the namespace, without tags (the consistency check's catalog)."""
        with self._db.session() as session:
            rows = session.scalars(
                select(DocumentRow)
                .where(DocumentRow.plugin_namespace == self.namespace)
                .order_by(DocumentRow.created_at, DocumentRow.id)
            )
            return [document_record(r, []) for r in rows]

    def ids_in_kb(self, kb_name: str, *, status: str | None = None) -> builtins.list[str]:
        """The ids of the KB's documents (of one ``status``): one statement, no rows built."""
        with self._db.session() as session:
            query = select(DocumentRow.id).where(
                DocumentRow.plugin_namespace == self.namespace, DocumentRow.kb_name == kb_name
            )
            if status is not None:
                query = query.where(DocumentRow.status == status)
            return list(session.scalars(query))

    def ids_with_tags(
        self, tags: Iterable[str], kb_names: Iterable[str] = ()
    ) -> builtins.list[str]:
        """Documents carrying any of ``tags`` (optionally inside some KBs): a query scope."""
        tag_list = [validate_tag(t) for t in tags]
        with self._db.session() as session:
            query = (
                select(DocumentTagRow.document_id)
                .join(DocumentRow, DocumentRow.id == DocumentTagRow.document_id)
                .where(
                    DocumentTagRow.plugin_namespace == self.namespace,
                    DocumentTagRow.tag.in_(tag_list),
                )
                .distinct()
            )
            kbs = list(kb_names)
            if kbs:
                query = query.where(DocumentRow.kb_name.in_(kbs))
            return sorted(session.scalars(query))

    def ids_with_unfinished_rows(self, kb_names: Iterable[str]) -> builtins.list[str]:
        """Documents of these KBs that may have rows in the vector store but are not completed
        (``_MAY_HAVE_ROWS``): what a search leaves out. One statement over three ranges of the
        tasks' status indexes; completed documents and the failed history are never read."""
        kbs = sorted(set(kb_names))
        if not kbs:
            return []
        with self._db.session() as session:
            found = session.scalars(_UNFINISHED_WITH_ROWS, {"ns": self.namespace, "kbs": kbs})
            return sorted(found)

    def collections_used(self, *, kb_name: str) -> set[str]:
        """Union of the completed documents' catalogs in a KB (to recompute after deletes)."""
        with self._db.session() as session:
            query = select(DocumentRow.collections_used).where(
                DocumentRow.plugin_namespace == self.namespace,
                DocumentRow.kb_name == kb_name,
                DocumentRow.status == "completed",
            )
            return {c for used in session.scalars(query) for c in used}

    # --- internals ------------------------------------------------------------------------------

    def _scoped(
        self, kb_name: str | None, status: str | None, tag: str | None, filename: str | None
    ) -> Any:
        query = select(DocumentRow).where(DocumentRow.plugin_namespace == self.namespace)
        if kb_name is not None:
            query = query.where(DocumentRow.kb_name == kb_name)
        if status is not None:
            query = query.where(DocumentRow.status == status)
        if filename is not None:
            query = query.where(DocumentRow.filename == filename)
        if tag is not None:
            query = query.join(DocumentTagRow, DocumentTagRow.document_id == DocumentRow.id).where(
                DocumentTagRow.tag == tag
            )
        return query

    def _first(self, *conditions: Any) -> DocumentRecord | None:
        with self._db.session() as session:
            row = session.scalars(
                select(DocumentRow).where(
                    DocumentRow.plugin_namespace == self.namespace, *conditions
                )
            ).first()
            if row is None:
                return None
            return document_record(row, self._tags(session, [row.id]).get(row.id, []))

    def _existing(
        self, session: Session, document_id: str, within: Collection[str] | None = None
    ) -> DocumentRow:
        query = select(DocumentRow).where(
            DocumentRow.plugin_namespace == self.namespace, DocumentRow.id == document_id
        )
        row = session.scalars(within_kbs(query, DocumentRow.kb_name, within)).first()
        if row is None:
            # Another namespace's id is indistinguishable from a missing one: no existence leak.
            raise NotFoundError(
                "document not found", document_id=document_id, namespace=self.namespace
            )
        return row

    def _require_kb(self, session: Session, kb_name: str) -> None:
        found = session.scalar(
            select(KnowledgeBaseRow.id).where(
                KnowledgeBaseRow.plugin_namespace == self.namespace,
                KnowledgeBaseRow.name == kb_name,
            )
        )
        if found is None:
            raise NotFoundError(
                f"knowledge base {kb_name!r} not found", kb_name=kb_name, namespace=self.namespace
            )

    def _tags(self, session: Session, ids: Sequence[str]) -> dict[str, builtins.list[str]]:
        if not ids:
            return {}
        found: dict[str, list[str]] = {}
        query = select(DocumentTagRow.document_id, DocumentTagRow.tag).where(
            DocumentTagRow.document_id.in_(list(ids))
        )
        for document_id, tag in session.execute(query):
            found.setdefault(document_id, []).append(tag)
        return found
