"""The wire shape of retrieved evidence (DESIGN §10), shared by REST, MCP and answers.

``{sources: {text: [...], image: [...]}, route, steps}``: text and image sources are numbered
separately from 1, in rank order, and the text numbers are the ``[n]`` an answer cites. A
source's ``score`` is its relevance in [0, 1] (relevance.py), capped by the relevance shown for
every source of its kind and scale ranked above it (:func:`shown_relevance`); ``scores`` keeps each
list's raw value (``relevance`` the uncapped one) and the fused ones that ordered it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from eagle_rag.retrieval.pack import ContextPack, Passage, Step
from eagle_rag.retrieval.relevance import relevance


def is_image(passage: Passage) -> bool:
    return passage.collection.endswith("_visual") or "image_id" in passage.metadata


def shown_relevance(passages: Sequence[Passage]) -> list[float]:
    """Each passage's shown relevance: its own, capped by that of every passage on its scale
    ranked above it. Text and images are numbered and ranked apart; and a bridged engine's own
    scores (Dify's similarity) are not on the scale of this engine's, so where fusion
    interleaves the two lists by rank, each is capped only by its own (a reranker's scores put
    every hit on one scale).

    The order comes from fusion (and a reranker), the relevance from each hit's own lists on an
    absolute scale, so the two can disagree (0.645, 0.664, 0.674 down one list). Shown as is, a
    ``score_threshold`` of 0.65 dropped the best hit and kept those below it, and a client
    reading the list top-down saw relevance rise. Capped, the scores never rise down a scale's
    list and a threshold keeps a prefix of it; the best hit keeps its own value, and no passage
    is shown above what its own lists scored. Capped across scales, a Dify hit of 0.91 ranked
    beside a weak native hit was shown 0.05, and a threshold of 0.3 dropped it.
    """
    cap: dict[tuple[bool, str], float] = {}
    shown = []
    for passage in passages:
        scale = is_image(passage), _scale(passage)
        cap[scale] = min(cap.get(scale, 1.0), relevance(passage.scores, passage.metadata))
        shown.append(cap[scale])
    return shown


def _scale(passage: Passage) -> str:
    """Which scale a passage's relevance is on (see :func:`relevance`'s rules)."""
    if "rerank" in passage.scores:
        return "rerank"
    engine = passage.metadata.get("engine")
    return engine if isinstance(engine, str) and engine in passage.scores else ""


def text_source(
    index: int, passage: Passage, score: float, *, max_chars: int | None = None
) -> dict[str, Any]:
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
        # Cut for a token budget (the text is the cut one) or here for ``max_chars``.
        "truncated": passage.truncated or len(content) < len(passage.text),
        "score": score,
        "scores": dict(passage.scores),
        "metadata": _public_metadata(passage),
    }


def image_source(index: int, passage: Passage, score: float) -> dict[str, Any]:
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
        "score": score,
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
    scored = list(zip(passages, shown_relevance(passages), strict=True))
    texts = [(p, score) for p, score in scored if not is_image(p)]
    images = [(p, score) for p, score in scored if is_image(p)]
    return {
        "text": [
            text_source(i, p, score, max_chars=max_chars)
            for i, (p, score) in enumerate(texts, start=1)
        ],
        "image": [image_source(i, p, score) for i, (p, score) in enumerate(images, start=1)],
    }


def steps_list(steps: Sequence[Step]) -> list[dict[str, Any]]:
    return [asdict(s) for s in steps]


def search_response(
    pack: ContextPack, *, max_chars: int | None = None, score_threshold: float | None = None
) -> dict[str, Any]:
    """The body of ``POST /search``; ``score_threshold`` drops passages of lower shown relevance
    (before numbering, so citations stay 1..n; the shown scores never rise down a list of one
    kind and scale, so what stays is the first passages of each)."""
    passages = pack.passages
    if score_threshold is not None:
        shown = shown_relevance(passages)
        passages = tuple(
            p for p, score in zip(passages, shown, strict=True) if score >= score_threshold
        )
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
