"""The catalog writes of an ingest run: accept, start, finish — one transaction each.

Each step touches documents, tasks and the KB together. One transaction per step keeps every
step atomic (never a document without its task, never a completed task on a pending document)
and keeps small documents cheap: a one-passage document used to pay about thirteen statements in
nine commits; it now pays three commits.

The statements are built once, with bound parameters, on the tables rather than the ORM classes:
this runs for every document, and py-spy on the msmarco ingest showed SQLAlchemy's statement
construction and ORM synchronisation costing more than the SQL itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    Table,
    and_,
    bindparam,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from eagle_rag.db.database import Database
from eagle_rag.db.records import (
    DocumentRecord,
    KnowledgeBaseRecord,
    TaskRecord,
    as_utc,
    validate_json_text,
    validate_kb_name,
    validate_tag,
)
from eagle_rag.db.repositories.base import NamespacedRepository, new_id
from eagle_rag.db.repositories.documents import DocumentRepository, document_record
from eagle_rag.db.repositories.knowledge_bases import kb_record
from eagle_rag.db.repositories.tasks import LIVE_STATUSES, log_line, task_record
from eagle_rag.db.tables import DocumentRow, DocumentTagRow, KnowledgeBaseRow, TaskRow, utcnow
from eagle_rag.errors import EagleError, NotFoundError

DOCUMENTS = cast(Table, DocumentRow.__table__)
TAGS = cast(Table, DocumentTagRow.__table__)
TASKS = cast(Table, TaskRow.__table__)
KBS = cast(Table, KnowledgeBaseRow.__table__)

_NS: BindParameter[str] = bindparam("ns")
_NOW: BindParameter[datetime] = bindparam("now")
_THE_TASK = (TASKS.c.plugin_namespace == _NS, TASKS.c.id == bindparam("tid"))
_THE_DOCUMENT = (DOCUMENTS.c.plugin_namespace == _NS, DOCUMENTS.c.id == bindparam("did"))
_THE_KB = (KBS.c.plugin_namespace == _NS, KBS.c.name == bindparam("kb"))

_KB_ID = select(KBS.c.id).where(*_THE_KB)
_KB = select(KBS).where(*_THE_KB)
_DOCUMENT_TAGS = select(TAGS.c.tag).where(TAGS.c.document_id == bindparam("did"))
_OWNER: BindParameter[str] = bindparam("owner")
# A live task may be claimed by the lease holder, or by anyone once nobody holds it (no owner,
# a broker's task without expiry, or an expired lease) -- while it has attempts left.
_CLAIMABLE = (
    TASKS.c.status.in_(LIVE_STATUSES),
    or_(
        TASKS.c.lease_owner.is_(None),
        TASKS.c.lease_owner == _OWNER,
        TASKS.c.lease_expires_at.is_(None),
        TASKS.c.lease_expires_at < _NOW,
    ),
    TASKS.c.attempts < func.coalesce(TASKS.c.max_attempts, bindparam("limit")),
)
_CLAIM_TASK = (
    update(TASKS)
    .where(*_THE_TASK, *_CLAIMABLE)
    .values(
        attempts=TASKS.c.attempts + 1,
        status="processing",
        error=None,
        progress_current=0,
        progress_total=0,
        lease_owner=_OWNER,
        lease_expires_at=bindparam("until"),
        updated_at=_NOW,
    )
    .returning(
        TASKS.c.document_id,
        TASKS.c.attempts,
        func.coalesce(TASKS.c.max_attempts, bindparam("limit")),
    )
)
_TASK_STATE = select(
    TASKS.c.document_id,
    TASKS.c.status,
    TASKS.c.attempts,
    TASKS.c.lease_owner,
    TASKS.c.lease_expires_at,
    TASKS.c.log,
    TASKS.c.error,
    TASKS.c.max_attempts,
).where(*_THE_TASK)
_MARK_PROCESSING = (
    update(DOCUMENTS)
    .where(*_THE_DOCUMENT)
    .values(status="processing", error=None, updated_at=_NOW)
    .returning(*DOCUMENTS.c)
)
_MARK_COMPLETED = (
    update(DOCUMENTS)
    .where(*_THE_DOCUMENT)
    .values(
        status="completed",
        error=None,
        chunk_count=bindparam("chunks"),
        collections_used=bindparam("collections", type_=DOCUMENTS.c.collections_used.type),
        structure=bindparam("tree", type_=DOCUMENTS.c.structure.type),
        pages=bindparam("page_count"),
        pipeline=bindparam("pipeline_name"),
        mime_type=bindparam("mime"),
        updated_at=_NOW,
    )
)
# Versions are ordered by upload (created_at, then id): completion order is no guide, since a
# large first upload can finish after a small second one, whose content must then stay.
_UPLOADED_BEFORE = or_(
    DOCUMENTS.c.created_at < bindparam("created"),
    and_(DOCUMENTS.c.created_at == bindparam("created"), DOCUMENTS.c.id < bindparam("did")),
)
_SAME_NAME = (
    DOCUMENTS.c.plugin_namespace == _NS,
    DOCUMENTS.c.kb_name == bindparam("kb"),
    DOCUMENTS.c.filename == bindparam("name"),
    DOCUMENTS.c.id != bindparam("did"),
)
_OLDER_VERSIONS = select(DOCUMENTS.c.id).where(
    *_SAME_NAME, DOCUMENTS.c.status.in_(("completed", "failed")), _UPLOADED_BEFORE
)
_NEWER_VERSION = (
    select(DOCUMENTS.c.id)
    .where(*_SAME_NAME, DOCUMENTS.c.status == "completed", ~_UPLOADED_BEFORE)
    .limit(1)
)
_NEWER = DOCUMENTS.alias("newer")
# An upload of a completed version's bytes again (a revert) while a later version of its name is
# still on its way: the revert is now the latest upload of that name, so the completed version
# takes the upload time; the later version, when it completes, finds a version uploaded after it
# and removes itself (as any version overtaken by a later upload does), not the reverted one.
_REAFFIRM = (
    update(DOCUMENTS)
    .where(
        *_THE_DOCUMENT,
        DOCUMENTS.c.status == "completed",
        exists().where(
            _NEWER.c.plugin_namespace == DOCUMENTS.c.plugin_namespace,
            _NEWER.c.kb_name == DOCUMENTS.c.kb_name,
            _NEWER.c.filename == DOCUMENTS.c.filename,
            _NEWER.c.id != DOCUMENTS.c.id,
            _NEWER.c.status.in_(("pending", "processing")),
        ),
    )
    .values(created_at=_NOW, updated_at=_NOW)
)
# Completed documents a completed upload of the same name made after them replaced: the
# completion removes them right after its commit, so they outlive it only after a crash there.
_REPLACED = select(DOCUMENTS.c.id).where(
    DOCUMENTS.c.plugin_namespace == _NS,
    DOCUMENTS.c.status == "completed",
    exists().where(
        _NEWER.c.plugin_namespace == DOCUMENTS.c.plugin_namespace,
        _NEWER.c.kb_name == DOCUMENTS.c.kb_name,
        _NEWER.c.filename == DOCUMENTS.c.filename,
        _NEWER.c.status == "completed",
        or_(
            _NEWER.c.created_at > DOCUMENTS.c.created_at,
            and_(_NEWER.c.created_at == DOCUMENTS.c.created_at, _NEWER.c.id > DOCUMENTS.c.id),
        ),
    ),
)
_TASK_LOG = select(TASKS.c.log).where(*_THE_TASK)
_COMPLETE_TASK = (
    update(TASKS)
    .where(*_THE_TASK)
    .values(
        status="completed",
        phase="completed",
        progress_current=bindparam("total"),
        progress_total=bindparam("total"),
        error=None,
        log=bindparam("lines", type_=TASKS.c.log.type),
        lease_owner=None,
        lease_expires_at=None,
        vectors_flushed=False,  # until the vector store's next flush (durability.py)
        updated_at=_NOW,
    )
)
# Completing is conditional: only the attempt that still holds the task may complete it. A cancel
# (failed), a retry (queued again, or claimed anew: another owner or attempt number) or a
# recovery take-over all mean this attempt's result must not be kept.
_COMPLETE_PROCESSING = _COMPLETE_TASK.where(TASKS.c.status == "processing")
_COMPLETE_HELD = _COMPLETE_PROCESSING.where(
    TASKS.c.lease_owner == _OWNER, TASKS.c.attempts == bindparam("attempt")
)


class AttemptSupersededError(EagleError):
    """The attempt no longer holds its task (cancelled, retried or taken over): nothing of it
    may be kept, and the task's row now belongs to whoever changed it."""

    code = "superseded"


@dataclass(frozen=True, slots=True)
class Accepted:
    """A submitted file: a new document with its queued task, or the dedup hit (no task)."""

    document: DocumentRecord
    task: TaskRecord | None

    @property
    def created(self) -> bool:
        return self.task is not None


@dataclass(frozen=True, slots=True)
class Attempt:
    """What a worker needs to run a task: the counted attempt, its document and KB."""

    document_id: str
    attempts: int  # this one included
    document: DocumentRecord | None  # None: deleted after it was queued
    kb: KnowledgeBaseRecord | None
    max_attempts: int = 1
    # claimed: run it; skipped: finished, or another holder's lease is live (a duplicate
    # delivery); exhausted: no attempts were left, the task is now failed with ``reason``.
    outcome: str = "claimed"
    reason: str | None = None


def _expected(expect: tuple[str | None, datetime | None] | None, *, live_only: bool) -> list[Any]:
    """A take-over's conditions: the lease (owner, expiry) the caller saw, a live status."""
    conditions: list[Any] = []
    if expect is not None:
        owner, expiry = expect
        conditions.append(
            TASKS.c.lease_owner.is_(None) if owner is None else TASKS.c.lease_owner == owner
        )
        conditions.append(
            TASKS.c.lease_expires_at.is_(None)
            if expiry is None
            else TASKS.c.lease_expires_at == expiry
        )
    if live_only:
        conditions.append(TASKS.c.status.in_(LIVE_STATUSES))
    return conditions


class IngestRunRepository(NamespacedRepository):
    def __init__(self, db: Database, namespace: str) -> None:
        super().__init__(db, namespace)
        self._documents = DocumentRepository(db, namespace)

    def accept(
        self,
        *,
        document_id: str,
        kb_name: str,
        filename: str,
        mime_type: str,
        sha256: str,
        size: int,
        object_key: str,
        source_url: str | None = None,
        extra: dict[str, Any] | None = None,
        tags: Iterable[str] = (),
        lease_owner: str | None = None,
        lease_until: datetime | None = None,
    ) -> Accepted:
        """Insert the pending document, its tags and a queued task; a dedup hit inserts nothing."""
        validate_kb_name(kb_name)
        validate_json_text(extra or {}, "metadata")
        tag_list = sorted({validate_tag(t) for t in tags})
        now = utcnow()
        document = {
            **_pending_document_defaults(),
            "id": document_id,
            "plugin_namespace": self.namespace,
            "kb_name": kb_name,
            "filename": filename,
            "mime_type": mime_type,
            "sha256": sha256,
            "size": size,
            "object_key": object_key,
            "source_url": source_url,
            "extra": dict(extra or {}),
            "created_at": now,
            "updated_at": now,
        }
        task = _queued_task(self.namespace, document_id, kb_name, now, lease_owner, lease_until)
        try:
            self._insert_accepted(kb_name, document, tag_list, task)
        except IntegrityError:
            existing = self._documents.find_by_sha(kb_name, sha256)
            if existing is None:
                raise
            if existing.filename == filename and self._reaffirm(existing.id, now):
                existing = self._documents.get(existing.id)
            return Accepted(existing, None)
        return Accepted(
            document_record(DocumentRow(**document), tag_list), task_record(TaskRow(**task))
        )

    def _reaffirm(self, document_id: str, now: datetime) -> bool:
        """Make a completed document the latest upload of its name if a later version of that
        name is still pending or processing (``_REAFFIRM``); whether it was."""
        with self._db.session() as session:
            done = session.execute(
                _REAFFIRM, {"ns": self.namespace, "did": document_id, "now": now}
            )
            return bool(cast(Any, done).rowcount)

    def _insert_accepted(
        self,
        kb_name: str,
        document: dict[str, Any],
        tag_list: list[str],
        task: dict[str, Any],
    ) -> None:
        """One transaction: the KB must exist; a duplicate file raises IntegrityError."""
        with self._db.session() as session:
            if session.execute(_KB_ID, {"ns": self.namespace, "kb": kb_name}).first() is None:
                raise NotFoundError(
                    f"knowledge base {kb_name!r} not found",
                    kb_name=kb_name,
                    namespace=self.namespace,
                )
            # The dedup constraint decides concurrent uploads here, not a prior SELECT.
            session.execute(insert(DOCUMENTS), document)
            if tag_list:
                session.execute(
                    insert(TAGS),
                    [
                        {
                            "document_id": document["id"],
                            "tag": t,
                            "plugin_namespace": self.namespace,
                        }
                        for t in tag_list
                    ],
                )
            session.execute(insert(TASKS), task)

    def start(self, task_id: str, *, owner: str, lease_s: float, max_attempts: int) -> Attempt:
        """Claim the task for ``owner`` under a lease of ``lease_s``: count an attempt and mark
        task and document processing; read the KB with them.

        A finished task, or one whose live lease another holder has, is skipped (duplicate
        deliveries are harmless); one without attempts left is failed here, with its reason.
        """
        now = utcnow()
        params: dict[str, Any] = {
            "ns": self.namespace,
            "tid": task_id,
            "now": now,
            "owner": owner,
            "until": now + timedelta(seconds=lease_s),
            "limit": max_attempts,
        }
        with self._db.session() as session:
            claimed = session.execute(_CLAIM_TASK, params).first()
            if claimed is None:
                return self._unclaimed(session, params)
            params["did"], attempts, limit = str(claimed[0]), int(claimed[1]), int(claimed[2])
            row = session.execute(_MARK_PROCESSING, params).first()
            if row is None:
                return Attempt(params["did"], attempts, None, None, limit)
            tags = list(session.execute(_DOCUMENT_TAGS, params).scalars())
            kb = session.execute(_KB, {"ns": self.namespace, "kb": row.kb_name}).first()
        return Attempt(
            params["did"],
            attempts,
            document_record(row, tags),
            None if kb is None else kb_record(kb),
            limit,
        )

    def _unclaimed(self, session: Session, params: dict[str, Any]) -> Attempt:
        state = session.execute(_TASK_STATE, params).first()
        if state is None:
            raise NotFoundError("task not found", job_id=params["tid"], namespace=self.namespace)
        document_id, status, attempts = str(state.document_id), str(state.status), state.attempts
        if status not in LIVE_STATUSES:
            return Attempt(document_id, attempts, None, None, outcome="skipped", reason=status)
        expiry = state.lease_expires_at
        held = state.lease_owner not in (None, params["owner"]) and (
            expiry is not None and as_utc(expiry) >= params["now"]
        )
        limit = state.max_attempts if state.max_attempts is not None else params["limit"]
        if held or attempts < limit:  # a live lease, or it changed hands meanwhile
            reason = f"lease held by {state.lease_owner}"
            return Attempt(document_id, attempts, None, None, outcome="skipped", reason=reason)
        last = state.error or "each attempt stopped before it finished (a worker was lost)"
        reason = f"gave up after {attempts} attempts: {last}"
        self._mark_failed(session, params["tid"], document_id, reason, state.log, params["now"])
        return Attempt(document_id, attempts, None, None, outcome="exhausted", reason=reason)

    def fail(self, task_id: str, document_id: str | None, reason: str) -> None:
        """End a task (and its document, when it still exists) ``failed`` with ``reason``."""
        now = utcnow()
        params = {"ns": self.namespace, "tid": task_id, "now": now}
        with self._db.session() as session:
            log = session.execute(_TASK_LOG, params).scalar()
            if log is None:
                raise NotFoundError("task not found", job_id=task_id, namespace=self.namespace)
            self._mark_failed(session, task_id, document_id, reason, log, now)

    def requeue(
        self,
        task_id: str,
        *,
        note: str,
        lease_owner: str | None,
        lease_until: datetime | None,
        error: str | None = None,
        expect: tuple[str | None, datetime | None] | None = None,
        grant_attempts: int | None = None,
        reopen: bool = False,
        live_only: bool = False,
    ) -> bool:
        """Put a task back to ``queued`` under a new lease, its document back to ``pending``.

        ``expect`` (owner, expiry) makes it a take-over: it only happens if the lease is still
        the one the caller saw, so two recoverers never both re-queue a task. ``grant_attempts``
        (a retry by hand) allows that many attempts more; ``reopen`` re-queues a completed
        document too (its vectors were lost); ``live_only`` (recovery) leaves a task alone that
        finished meanwhile (a cancel keeps the lease it saw). Returns whether it happened.
        """
        now = utcnow()
        conditions = [TASKS.c.plugin_namespace == self.namespace, TASKS.c.id == task_id]
        conditions += _expected(expect, live_only=live_only)
        with self._db.session() as session:
            state = session.execute(select(TASKS).where(*conditions)).first()
            if state is None:
                return False
            values: dict[str, Any] = {
                "status": "queued",
                "phase": "queued",
                "error": state.error if error is None else error,  # the last reason stays
                "lease_owner": lease_owner,
                "lease_expires_at": lease_until,
                "log": log_line(state.log, note),
                "updated_at": now,
            }
            if grant_attempts is not None:
                values["max_attempts"] = state.attempts + grant_attempts
            changed = session.execute(update(TASKS).where(*conditions).values(**values))
            if changed.rowcount == 0:  # type: ignore[attr-defined]
                return False
            session.execute(
                update(DOCUMENTS)
                .where(
                    DOCUMENTS.c.plugin_namespace == self.namespace,
                    DOCUMENTS.c.id == state.document_id,
                    *(() if reopen else (DOCUMENTS.c.status != "completed",)),
                )
                .values(status="pending", error=None, updated_at=now)
            )
        return True

    def _mark_failed(
        self,
        session: Session,
        task_id: str,
        document_id: str | None,
        reason: str,
        log: list[str],
        now: datetime,
    ) -> None:
        session.execute(
            update(TASKS)
            .where(TASKS.c.plugin_namespace == self.namespace, TASKS.c.id == task_id)
            .values(
                status="failed",
                phase="failed",
                error=reason,
                lease_owner=None,
                lease_expires_at=None,
                log=log_line(log, f"failed: {reason}"),
                updated_at=now,
            )
        )
        if document_id is not None:
            session.execute(
                update(DOCUMENTS)
                .where(
                    DOCUMENTS.c.plugin_namespace == self.namespace, DOCUMENTS.c.id == document_id
                )
                .values(status="failed", error=reason, updated_at=now)
            )

    def replaced_versions(self, document_id: str | None = None) -> list[str]:
        """Completed documents that a completed, later upload of the same filename in the same
        KB replaced, and that are still here (a crash between that completion and its removal
        of the older versions, IngestPipeline._succeed): the ids to remove. With
        ``document_id``: that one, if it still is one (checked again just before it goes)."""
        query = _REPLACED if document_id is None else _REPLACED.where(DOCUMENTS.c.id == document_id)
        with self._db.session() as session:
            return [str(i) for i in session.execute(query, {"ns": self.namespace}).scalars()]

    def complete(
        self,
        task_id: str,
        document: DocumentRecord,
        *,
        chunks: int,
        collections: Iterable[str],
        kb_collections: Iterable[str],
        structure: dict[str, Any],
        pages: int | None,
        pipeline: str,
        mime_type: str,
        note: str,
        owner: str | None = None,
        attempt: int | None = None,
    ) -> list[str]:
        """Mark the document and task completed and extend the KB catalog, atomically.

        Returns the ids of the documents to remove (the caller removes their vectors and
        objects): the completed or failed ones with the same filename in the KB uploaded before
        this one, which it replaces; and this one itself if a version uploaded after it has
        completed already (it replaced this one, which finished later).
        Raises NotFoundError, changing nothing, when the document or task was deleted meanwhile,
        and AttemptSupersededError, changing nothing, when the task is no longer processing (or,
        given ``owner`` and ``attempt``, no longer held by that attempt).
        """
        used = sorted(set(collections))
        params = {
            "ns": self.namespace,
            "tid": task_id,
            "did": document.id,
            "kb": document.kb_name,
            "name": document.filename,
            "created": document.created_at,
            "now": utcnow(),
            "chunks": chunks,
            "collections": used,
            "tree": structure,
            "page_count": pages,
            "pipeline_name": pipeline,
            "mime": mime_type,
            "total": chunks,
            "owner": owner,
            "attempt": attempt,
        }
        with self._db.session() as session:
            self._complete_task(session, params, note, held=owner is not None)
            if session.execute(_MARK_COMPLETED, params).rowcount == 0:  # type: ignore[attr-defined]
                raise NotFoundError("document not found", document_id=document.id)
            added = set(used) - set(kb_collections)
            if added:
                self._extend_catalog(session, document.kb_name, added)
            older = [str(i) for i in session.execute(_OLDER_VERSIONS, params).scalars()]
            if session.execute(_NEWER_VERSION, params).first() is not None:
                older.append(document.id)
        return older

    def _complete_task(
        self, session: Session, params: dict[str, Any], note: str, *, held: bool
    ) -> None:
        """The task's conditional UPDATE, first: a cancel that committed before it wins, and
        one after it finds the task completed (a conflict); the document is marked only once
        this has matched, in the same transaction, so a cancelled attempt changes nothing."""
        log = session.execute(_TASK_LOG, params).scalar()
        if log is None:
            raise NotFoundError("task not found", job_id=params["tid"], namespace=self.namespace)
        statement = _COMPLETE_HELD if held else _COMPLETE_PROCESSING
        done = session.execute(statement, {**params, "lines": log_line(log, note)})
        if done.rowcount == 0:  # type: ignore[attr-defined]
            raise AttemptSupersededError(
                "the task was cancelled, retried or taken over while this attempt ran",
                job_id=params["tid"],
            )

    def _extend_catalog(self, session: Session, kb_name: str, added: set[str]) -> None:
        """Union collections into the KB's catalog under a row lock (rare: a new collection)."""
        kb = session.scalars(
            select(KnowledgeBaseRow)
            .where(
                KnowledgeBaseRow.plugin_namespace == self.namespace,
                KnowledgeBaseRow.name == kb_name,
            )
            .with_for_update()
        ).first()
        if kb is not None and not added <= set(kb.collections_used):
            kb.collections_used = sorted({*kb.collections_used, *added})


def _pending_document_defaults() -> dict[str, Any]:
    """The columns of a just-accepted document that do not come from the upload (fresh
    containers each time: the rows become records)."""
    return {
        "pages": None,
        "status": "pending",
        "pipeline": None,
        "structure": {},
        "collections_used": [],
        "chunk_count": 0,
        "error": None,
    }


def _queued_task(
    namespace: str,
    document_id: str,
    kb_name: str,
    now: datetime,
    lease_owner: str | None,
    lease_until: datetime | None,
) -> dict[str, Any]:
    """The queued task row of a just-accepted document."""
    return {
        "id": new_id(),
        "plugin_namespace": namespace,
        "document_id": document_id,
        "kb_name": kb_name,
        "status": "queued",
        "phase": "queued",
        "progress_current": 0,
        "progress_total": 0,
        "attempts": 0,
        "error": None,
        "log": [],
        "created_at": now,
        "updated_at": now,
        "lease_owner": lease_owner,
        "lease_expires_at": lease_until,
        "max_attempts": None,
        "vectors_flushed": True,
    }
