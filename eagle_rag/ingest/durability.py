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
from typing import TYPE_CHECKING

from eagle_rag.db.tables import utcnow
from eagle_rag.errors import InvalidInputError
from eagle_rag.index.filters import eq
from eagle_rag.ingest.leases import Leases

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Flusher:
    """The queue's idle hook: flush the vector store, then record which tasks it covered."""

    app: Runtime

    async def __call__(self) -> None:
        started = utcnow()
        await asyncio.to_thread(self.app.vectors.flush)
        await asyncio.to_thread(self.app.repositories.tasks.mark_flushed, before=started)


def stored_vectors(app: Runtime, document_id: str, collections: tuple[str, ...]) -> int:
    total = 0
    for collection in collections:
        try:
            total += app.vectors.count(collection, eq("document_id", document_id))
        except InvalidInputError:  # a plugin collection this process has no spec for
            continue
    return total


def lost_on_crash(app: Runtime, leases: Leases) -> list[str]:
    """Re-queue (held by ``leases``) the completed tasks whose vectors a crash lost."""
    repos, lost, intact = app.repositories, [], []
    for task in repos.tasks.unflushed():
        document = repos.documents.find(task.document_id)
        if document is None:
            continue
        collections = tuple(document.collections_used) or ("eagle_text",)
        if stored_vectors(app, document.id, collections) >= document.chunk_count:
            intact.append(task.id)
            continue
        requeued = repos.ingest_runs.requeue(
            task.id,
            note="its vectors were lost before the store flushed them (a crash); ingesting again",
            lease_owner=leases.owner,
            lease_until=leases.until(),
            grant_attempts=1,
            reopen=True,
        )
        if requeued:
            lost.append(task.id)
    if intact:
        repos.tasks.mark_flushed(task_ids=intact)
    if lost:
        logger.warning("%d completed document(s) lost vectors in a crash: re-ingesting", len(lost))
    return lost
