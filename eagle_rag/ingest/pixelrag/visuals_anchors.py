"""The four fusion anchors of a visual: which text chunk it belongs to, in which section, and
the summary it is found by.

``source_chunk_id`` is the text chunk whose boxes overlap the region most on its page, else the
nearest one on that page (a figure sits between paragraphs), else the first chunk of the page.
``parent_section`` is that chunk's Knowhere path. ``content_summary`` is the caption, the
nearby heading and the text inside the region, trimmed; a picture with little text of its own
borrows the start of the chunk around it, which is what a reader would see next to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.ingest.pixelrag.geometry import BBox, center, overlap
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual
from eagle_rag.plugins.payloads import TextChunk

SUMMARY_CHARS = 800  # embedding cost grows with length; caption and heading come first
OWN_TEXT_ENOUGH = 40  # characters: below this a visual borrows its chunk's text
BORROWED_CHARS = 400
SKIPPED_TYPES = ("section_summary",)
NEAR_WORDS = 6  # a run of words of a picture's nearby text that finds its chunk
MAX_NEAR_PROBES = 20


@dataclass(frozen=True, slots=True)
class Anchors:
    source_chunk_id: str | None
    parent_section: str
    heading: str
    content_summary: str
    fields: Mapping[str, Any] = field(default_factory=dict)  # the chunk's filterable fields


def anchors(visual: FoundVisual, chunks: Sequence[TextChunk], root: str) -> Anchors:
    """Anchors for ``visual`` among the document's text chunks (``root``: the document path)."""
    chunk = _source(visual, [c for c in chunks if c.type not in SKIPPED_TYPES])
    if chunk is None:
        summary = _summary(visual.caption, "", visual.text, "")
        return Anchors(None, root, "", summary)
    heading = str(chunk.metadata.get("section_title") or chunk.path.rsplit("/", 1)[-1])
    borrowed = chunk.text[:BORROWED_CHARS] if len(visual.text) < OWN_TEXT_ENOUGH else ""
    summary = _summary(visual.caption, heading, visual.text, borrowed)
    return Anchors(chunk.chunk_id, chunk.path, heading, summary, _filterable(chunk.metadata))


def _source(visual: FoundVisual, chunks: Sequence[TextChunk]) -> TextChunk | None:
    if visual.near:  # no page to look on: the chunk that holds the text next to it
        return _holding(visual.near, chunks)
    on_page = [c for c in chunks if visual.page in c.page_nums]
    if not on_page:
        return None
    best: tuple[float, float] | None = None
    chosen = on_page[0]
    cx, cy = center(visual.bbox)
    for chunk in on_page:
        boxes = _boxes(chunk, visual.page)
        if not boxes:
            continue
        covered = sum(overlap(visual.bbox, box) for box in boxes)
        distance = min(abs(center(box)[1] - cy) + abs(center(box)[0] - cx) / 4 for box in boxes)
        key = (-covered, distance)  # most overlap first, then nearest
        if best is None or key < best:
            best, chosen = key, chunk
    return chosen


def _holding(near: str, chunks: Sequence[TextChunk]) -> TextChunk | None:
    """The chunk holding the start of ``near``; else the first holding a run of NEAR_WORDS of
    its words (a picture's OCR text, whose first line became a heading, not chunk text)."""
    texts = [(chunk, " ".join(chunk.text.split())) for chunk in chunks]
    words = near.split()
    probes = [near[:80]] + [
        " ".join(words[i : i + NEAR_WORDS]) for i in range(NEAR_WORDS, len(words), NEAR_WORDS)
    ]
    for probe in probes[:MAX_NEAR_PROBES]:
        found = next((chunk for chunk, text in texts if probe in text), None)
        if found is not None:
            return found
    return None


def _boxes(chunk: TextChunk, page: int) -> list[BBox]:
    found = chunk.metadata.get("boxes")
    if not isinstance(found, list):
        return []
    boxes: list[BBox] = []
    for item in found:
        if isinstance(item, Mapping) and item.get("page") == page:
            x0, y0, x1, y1 = (float(v) for v in item["bbox"])
            boxes.append((x0, y0, x1, y1))
    return boxes


def _summary(caption: str, heading: str, own: str, borrowed: str) -> str:
    parts = [p.strip() for p in (caption, heading, own, borrowed) if p and p.strip()]
    unique = list(dict.fromkeys(parts))
    return "\n".join(unique)[:SUMMARY_CHARS]


def _filterable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The chunk's scalar document fields (filename, source_type, year, custom keys), so the
    same metadata filters narrow visuals as they narrow text."""
    return {
        k: v
        for k, v in metadata.items()
        if k != "section_title" and isinstance(v, str | int | float | bool)
    }
