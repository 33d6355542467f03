"""Vector-store rows → RetrievedHit, for text and visual collections alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagle_rag.index.vector_store import VectorHit
from eagle_rag.plugins.payloads import RetrievedHit

_ROW_KEYS = ("type", "level", "chunk_index", "page_nums", "image_id", "page", "chunk_type")


def to_hit(collection: str, hit: VectorHit, *, stage: str) -> RetrievedHit:
    """A hit whose ``scores[stage]`` holds the raw score of the search that found it."""
    fields = hit.fields
    visual = "image_id" in fields
    metadata: dict[str, Any] = {k: fields[k] for k in _ROW_KEYS if k in fields}
    metadata["page_nums"] = _pages(fields)
    row_metadata = fields.get("metadata")
    if isinstance(row_metadata, Mapping):
        metadata["fields"] = dict(row_metadata)
    if visual:
        text = str(fields.get("content_summary", ""))
        path = str(fields.get("parent_section", ""))
        # A visual is its own evidence (one item per image, see retrieval/visual.py); the text
        # chunk it belongs to is an anchor, not its identity.
        source = None
        metadata["source_chunk_id"] = str(fields.get("source_chunk_id") or "") or None
        metadata.setdefault("type", str(fields.get("chunk_type", "image")))
    else:
        text = str(fields.get("text", ""))
        path = str(fields.get("path", ""))
        source = hit.id  # a text chunk is its own source: the same chunk anywhere is one hit
    return RetrievedHit(
        chunk_id=hit.id,
        collection=collection,
        document_id=str(fields.get("document_id", "")),
        kb_name=str(fields.get("kb_name", "")),
        text=text,
        path=path,
        score=hit.score,
        scores={stage: hit.score},
        source_chunk_id=source,
        metadata=metadata,
    )


def _pages(fields: Mapping[str, Any]) -> list[int]:
    pages = fields.get("page_nums")
    if pages:
        return [int(p) for p in pages]
    page = fields.get("page")
    return [int(page)] if page else []
