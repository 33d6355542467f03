"""Vectors a crash could lose: Milvus Lite keeps rows written since its last flush in memory.

A task's ``vectors_flushed`` is False from its completion until the store's next flush; the
queue flushes when it drains (``Flusher``) and records the flush. At start-up, before it runs
anything, the queue checks every completed-but-unflushed task's document (``lost_on_crash``):
if its vectors are all there (a flush happened, only its record did not), the task is marked
flushed; if not, the task is queued again and the document ingested anew. So a ``kill -9``
never leaves a ``completed`` document that cannot be found.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from eagle_rag.db.tables import utcnow
from eagle_rag.errors import InvalidInputError, NotFoundError
from eagle_rag.index.filters import eq
from eagle_rag.ingest.cancel import undo_abandoned
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.ingest.leases import Leases

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Flusher:
    """The queue's idle hook: flush the vector store, then record which tasks it covered.

    A flush that fails can take the rows written since the last good one with it (Milvus Lite
    on a full disk dropped them and carried on): the next flush that succeeds then counts the
    vectors of each task it would record, as a start after a crash does, and queues again those
    whose rows are gone, instead of recording them flushed (they stayed ``completed`` with no
    vectors, and no restart looked at them again)."""

    app: Runtime
    failed: bool = False  # a flush failed since the last one that succeeded

    async def __call__(self) -> None:
        started = utcnow()
        try:
            await asyncio.to_thread(self.app.vectors.flush)
        except Exception:
            self.failed = True
            raise
        if not self.failed:
            await asyncio.to_thread(self.app.repositories.tasks.mark_flushed, before=started)
            return
        # Queued again with an expired lease: the queue's recovery beat runs them.
        await asyncio.to_thread(requeue_lost, self.app, None, utcnow(), before=started)
        self.failed = False


def stored_vectors(app: Runtime, document_id: str, collections: tuple[str, ...]) -> int:
    total = 0
    for collection in collections:
        try:
            total += app.vectors.count(collection, eq("document_id", document_id))
        except InvalidInputError:  # a plugin collection this process has no spec for
            continue
    return total


def lost_on_crash(app: Runtime, leases: Leases) -> list[str]:
    """Re-queue (held by ``leases``) the completed tasks whose vectors a crash lost; then
    finish what the crash interrupted (``finish_interrupted``)."""
    lost = requeue_lost(app, leases.owner, leases.until())
    finish_interrupted(app, leases.owner, leases.lease_s)
    return lost


def finish_interrupted(app: Runtime, owner: str, lease_s: float) -> None:
    """Finish what a killed process left half done: the removal of the versions a re-upload
    replaced, and the undo of a cancelled attempt (``cancel.undo_abandoned``). A store that is
    down leaves it to the next round (or doctor --consistency --repair)."""
    try:
        remove_replaced(app)
    except Exception:
        logger.exception("could not remove the older versions a crash left")
    try:
        undo_abandoned(app, owner, lease_s)
    except Exception:
        logger.exception("could not undo the writes of cancelled attempts a crash left")


def remove_replaced(app: Runtime) -> list[str]:
    """Remove the older versions of a re-uploaded file that a crash left beside the new one.

    A completion removes them only after it committed (a removal cannot join the catalog's
    transaction: it deletes vectors and objects too); a ``kill -9`` in between left both
    versions completed and searchable. Run at start (a newer version whose vectors the crash
    lost was queued again just before, ``requeue_lost``, so it is not completed here and the
    older one stays until it is) and, in Celery workers, beside running pipelines. Each is
    checked again just before it goes (the newer one may have been deleted or sent through
    the pipeline again meanwhile), and one that cannot be removed costs only itself."""
    runs, removed = app.repositories.ingest_runs, []
    for document_id in runs.replaced_versions():
        try:
            if runs.replaced_versions(document_id):
                remove_document(app, document_id)
                removed.append(document_id)
        except NotFoundError:  # deleted meanwhile
            continue
        except Exception:  # the next sweep tries again; the others go now
            logger.exception("could not remove %s, an older version of a re-upload", document_id)
    if removed:
        logger.warning(
            "removed %d older version(s) of re-uploaded files that a crash left", len(removed)
        )
    return removed


def requeue_lost(
    app: Runtime,
    owner: str | None,
    until: datetime,
    *,
    before: datetime | None = None,
) -> list[str]:
    """Re-queue, under ``owner``'s lease until ``until``, the completed-but-unflushed tasks
    (last changed before ``before``, if given) whose document lacks vectors; record the
    others flushed. Returns the re-queued ones."""
    repos, lost, intact = app.repositories, [], []
    for task in repos.tasks.unflushed():
        if before is not None and task.updated_at is not None and task.updated_at >= before:
            continue  # completed during the flush: its rows may be in no flush yet
        document = repos.documents.find(task.document_id)
        if document is None:
            continue
        collections = tuple(document.collections_used) or ("eagle_text",)
        if stored_vectors(app, document.id, collections) >= document.chunk_count:
            intact.append(task.id)
            continue
        requeued = repos.ingest_runs.requeue(
            task.id,
            note=(
                "its vectors were lost before the store flushed them (a crash, or a failed "
                "flush); ingesting again"
            ),
            lease_owner=owner,
            lease_until=until,
            grant_attempts=1,
            reopen=True,
        )
        if requeued:
            lost.append(task.id)
    if intact:
        repos.tasks.mark_flushed(task_ids=intact)
    if lost:
        logger.warning(
            "%d completed document(s) lost vectors before a flush: re-ingesting", len(lost)
        )
    return lost
