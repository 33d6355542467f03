"""Deleting a KB or a document while its ingest runs leaves nothing of it behind.

The deletion removes vectors, then objects, then catalog rows. An ingest that writes its
vectors after the first step and completes before the rows go was a real interleaving on a
busy server (an upload burst, then ``DELETE /knowledge_bases/{kb}``): its rows stayed as
orphan vectors until ``doctor --consistency --repair``.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Callable
from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import NotFoundError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.deletion import remove_document, remove_knowledge_base
from eagle_rag.storage.keys import validate_prefix

pytestmark = pytest.mark.asyncio(loop_scope="module")

TEXT = b"# Wiring\n\nThe inverter is wired to the battery through a 40 A fuse.\n"


def _pause_after(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str
) -> tuple[threading.Event, threading.Event]:
    """Make ``target.name`` signal once it has run and then wait until told to go on."""
    done, resume = threading.Event(), threading.Event()
    original: Callable[..., Any] = getattr(target, name)

    def paused(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not done.is_set():
            done.set()
            resume.wait(30)
        return result

    monkeypatch.setattr(target, name, paused)
    return done, resume


def _vectors(app: EagleApp, **where: str) -> int:
    [(field, value)] = where.items()
    return app.vectors.count(TEXT_COLLECTION, f.eq(field, value))


async def _submit(app: EagleApp, kb: str, data: bytes, name: str) -> str:
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(data)
    )
    return submission.document_id


async def test_an_upload_completed_during_a_kb_delete_leaves_no_vectors(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors_deleted, resume = _pause_after(monkeypatch, app.vectors, "delete_kb")
    removal = asyncio.ensure_future(asyncio.to_thread(remove_knowledge_base, app, kb))
    await asyncio.to_thread(vectors_deleted.wait, 30)
    # The KB's row is still there: the upload is accepted and ingested to completion.
    document_id = await _submit(app, kb, TEXT, "wiring.md")
    await app.queue.join()  # type: ignore[attr-defined]
    assert app.repositories.documents.get(document_id).status == "completed"
    assert _vectors(app, document_id=document_id) > 0
    resume.set()
    await removal
    assert _vectors(app, kb_name=kb) == 0
    assert app.repositories.documents.ids_in_kb(kb) == []
    assert app.objects.list(validate_prefix(app.namespace, kb)) == []
    with pytest.raises(NotFoundError):
        app.repositories.knowledge_bases.get(kb)


async def test_a_reingest_completed_during_a_document_delete_leaves_no_vectors(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    document_id = await _submit(app, kb, TEXT, "wiring.md")
    await app.queue.join()  # type: ignore[attr-defined]
    vectors_deleted, resume = _pause_after(monkeypatch, app.objects, "delete_prefix")
    removal = asyncio.ensure_future(asyncio.to_thread(remove_document, app, document_id))
    await asyncio.to_thread(vectors_deleted.wait, 30)
    # The document's row is still there: a rebuild runs it again, to completion.
    monkeypatch.undo()
    await asyncio.to_thread(_rebuild_from_memory, app, kb, document_id)
    await app.queue.join()  # type: ignore[attr-defined]
    assert _vectors(app, document_id=document_id) > 0
    resume.set()
    await removal
    assert _vectors(app, document_id=document_id) == 0
    with pytest.raises(NotFoundError):
        app.repositories.documents.get(document_id)


def _rebuild_from_memory(app: EagleApp, kb: str, document_id: str) -> None:
    """Put the original back (the paused deletion already removed it) and rebuild the KB."""
    document = app.repositories.documents.get(document_id)
    assert document.object_key
    app.objects.put(document.object_key, io.BytesIO(TEXT))
    app.ingest.rebuild(kb)
