"""Delete documents and knowledge bases everywhere they live: vectors in every collection (and so
their BM25 entries), objects, catalog rows (with tags, tasks and the dedup key), and the KB's
``collections_used`` recomputed from what remains."""

from __future__ import annotations

from typing import Any

from eagle_rag.storage.keys import validate_prefix


def remove_document(app: Any, document_id: str) -> None:
    """Vectors first: if a later step fails, nothing of the document can still be retrieved."""
    repos = app.repositories
    document = repos.documents.get(document_id)  # NotFoundError for another namespace's id
    app.vectors.delete_documents([document.id])
    app.objects.delete_prefix(validate_prefix(app.namespace, document.kb_name, document.id))
    repos.documents.delete(document.id)
    remaining = repos.documents.collections_used(kb_name=document.kb_name)
    repos.knowledge_bases.set_collections(document.kb_name, remaining)


def remove_knowledge_base(app: Any, kb_name: str) -> int:
    """Remove a KB and all its documents; returns how many documents went with it."""
    repos = app.repositories
    repos.knowledge_bases.get(kb_name)
    app.vectors.delete_kb(kb_name)
    app.objects.delete_prefix(validate_prefix(app.namespace, kb_name))
    ids = repos.documents.ids_in_kb(kb_name)
    for document_id in ids:
        repos.documents.delete(document_id)
    repos.knowledge_bases.delete(kb_name)
    return len(ids)
