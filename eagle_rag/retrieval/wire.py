"""The wire shape of retrieved evidence (DESIGN §10), shared by REST, MCP and answers.

``{sources: {text: [...], image: [...]}, route, steps}``: text and image sources are numbered
separately from 1, in rank order, and the text numbers are the ``[n]`` an answer cites. A
source's ``score`` is its relevance in [0, 1] (relevance.py); ``scores`` keeps each list's raw
value and the fused ones that ordered it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from eagle_rag.retrieval.pack import ContextPack, Passage, Step
from eagle_rag.retrieval.relevance import relevance


def is_image(passage: Passage) -> bool:
    return passage.collection.endswith("_visual") or "image_id" in passage.metadata


def text_source(index: int, passage: Passage, *, max_chars: int | None = None) -> dict[str, Any]:
    content = passage.text if max_chars is None else passage.text[:max_chars]
    return {
        "index": index,
        "chunk_id": passage.chunk_id,
        "document_id": passage.document_id,
        "filename": passage.filename,
        "kb_name": passage.kb_name,
        "collection": passage.collection,
        "path": passage.path,
        "level": passage.metadata.get("level"),
        "type": passage.type,
        "page_nums": list(passage.page_nums),
        "boxes": boxes(passage.metadata),
        "content": content,
        "truncated": len(content) < len(passage.text),
        "score": relevance(passage.scores, passage.metadata),
        "scores": dict(passage.scores),
        "metadata": _public_metadata(passage),
    }


def image_source(index: int, passage: Passage) -> dict[str, Any]:
    """A visual hit (DESIGN §10 + bbox, size and where to fetch the picture)."""
    fields = passage.metadata.get("fields") or {}
    image_id = passage.metadata.get("image_id")
    return {
        "index": index,
        "chunk_id": passage.chunk_id,
        "document_id": passage.document_id,
        "filename": passage.filename,
        "kb_name": passage.kb_name,
        "collection": passage.collection,
        "type": "image",
        "image_id": image_id,
        "url": f"/images/{image_id}" if image_id else None,
        "page": passage.page_nums[0] if passage.page_nums else None,
        "page_nums": list(passage.page_nums),
        "chunk_type": passage.type,
        "parent_section": passage.path,
        "path": passage.path,
        "content_summary": passage.text,
        "caption": fields.get("caption") or "",
        "source_chunk_id": passage.metadata.get("source_chunk_id") or fields.get("source_chunk_id"),
        "bbox": fields.get("bbox"),
        "boxes": boxes(passage.metadata),
        "width": fields.get("width"),
        "height": fields.get("height"),
        "media_type": fields.get("media_type"),
        "score": relevance(passage.scores, passage.metadata),
        "scores": dict(passage.scores),
    }


def boxes(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Where the chunk sits on its pages (``[{page, bbox}]``, normalised); [] when unknown."""
    found = metadata.get("boxes")
    fields = metadata.get("fields")
    if found is None and isinstance(fields, Mapping):
        found = fields.get("boxes")
    if not isinstance(found, list):
        return []
    return [dict(b) for b in found if isinstance(b, Mapping)]


def split_sources(
    passages: Sequence[Passage], *, max_chars: int | None = None
) -> dict[str, list[dict[str, Any]]]:
    texts = [p for p in passages if not is_image(p)]
    images = [p for p in passages if is_image(p)]
    return {
        "text": [text_source(i, p, max_chars=max_chars) for i, p in enumerate(texts, start=1)],
        "image": [image_source(i, p) for i, p in enumerate(images, start=1)],
    }


def steps_list(steps: Sequence[Step]) -> list[dict[str, Any]]:
    return [asdict(s) for s in steps]


def search_response(
    pack: ContextPack, *, max_chars: int | None = None, score_threshold: float | None = None
) -> dict[str, Any]:
    """The body of ``POST /search``; ``score_threshold`` drops passages of lower relevance
    (before numbering, so citations stay 1..n)."""
    passages = pack.passages
    if score_threshold is not None:
        passages = tuple(p for p in passages if relevance(p.scores, p.metadata) >= score_threshold)
    return {
        "query": pack.query,
        "kb_names": list(pack.kb_names),
        "sources": split_sources(passages, max_chars=max_chars),
        "route": pack.route_dict(),
        "steps": steps_list(pack.steps),
        "token_count": pack.token_count,
        "truncated": pack.truncated,
    }


def _public_metadata(passage: Passage) -> dict[str, Any]:
    """The chunk's own metadata (section title, offsets, custom fields), flattened once."""
    metadata = {k: v for k, v in passage.metadata.items() if k != "fields"}
    fields = passage.metadata.get("fields")
    if isinstance(fields, dict):
        metadata.update(fields)
    return metadata
