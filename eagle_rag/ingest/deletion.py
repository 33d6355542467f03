"""Delete documents and knowledge bases everywhere they live: vectors in every collection (and so
their BM25 entries), objects, catalog rows (with tags, tasks and the dedup key), and the KB's
``collections_used`` recomputed from what remains."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from typing import TYPE_CHECKING

from eagle_rag.engines.service import KnowledgeBaseService
from eagle_rag.errors import NotFoundError
from eagle_rag.storage.keys import validate_prefix

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)


def remove_document(app: Runtime, document_id: str) -> None:
    """Vectors first: if a later step fails, nothing of the document can still be retrieved.

    A document of a KB bound to another engine is deleted there too (best effort: a remote
    that is down must not keep a document alive here; the failure is logged).
    """
    repos = app.repositories
    document = repos.documents.get(document_id)  # NotFoundError for another namespace's id
    remote_id = document.extra.get("remote_document_id")
    if remote_id:
        _delete_remote(app, document.kb_name, str(remote_id))
    prefix = validate_prefix(app.namespace, document.kb_name, document.id)
    app.vectors.delete_documents([document.id])
    app.objects.delete_prefix(prefix)
    repos.documents.delete(document.id)
    # An ingest of the document that ran meanwhile may have written rows after the first pass
    # and completed before the row went; one that completes from now on finds no document
    # and undoes its own writes (IngestPipeline._succeed).
    app.vectors.delete_documents([document.id])
    app.objects.delete_prefix(prefix)
    remaining = repos.documents.collections_used(kb_name=document.kb_name)
    repos.knowledge_bases.set_collections(document.kb_name, remaining)


def remove_knowledge_base(app: Runtime, kb_name: str) -> int:
    """Remove a KB and all its documents; returns how many documents went with it."""
    repos = app.repositories
    repos.knowledge_bases.get(kb_name)
    removed = _remove_kb_contents(app, kb_name)
    repos.knowledge_bases.delete(kb_name)
    # Uploads accepted and ingests completed while the steps above ran (their rows written
    # after the first pass): no upload is accepted into the KB now that its row is gone, and
    # an ingest that completes from now on finds no document and undoes its own writes.
    return removed + _remove_kb_contents(app, kb_name)


def _remove_kb_contents(app: Runtime, kb_name: str) -> int:
    """Vectors first: if a later step fails, nothing of the KB can still be retrieved."""
    repos = app.repositories
    app.vectors.delete_kb(kb_name)
    app.objects.delete_prefix(validate_prefix(app.namespace, kb_name))
    ids = repos.documents.ids_in_kb(kb_name)
    for document_id in ids:
        with contextlib.suppress(NotFoundError):  # deleted meanwhile by another request
            repos.documents.delete(document_id)
    return len(ids)


def _delete_remote(app: Runtime, kb_name: str, remote_id: str) -> None:
    kb = app.repositories.knowledge_bases.get(kb_name)
    engine = KnowledgeBaseService(app).bridge(kb.engine)
    call = engine.delete_document(kb_name, remote_id, kb.creation_settings)
    try:
        # Deletion is sync (API threads, CLI); the engine is async: run it on a loop of its own.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, call).result()
    except Exception as exc:
        logger.warning("could not delete %s from engine %s: %s", remote_id, kb.engine, exc)
