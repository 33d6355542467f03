"""Boxes for chunks: where on which page a chunk's text sits (the shared ``boxes`` contract).

A block (paragraph, table, OCR'd region) carries one box per line with the span of its text the
line covers. A chunk gets, for every block it overlaps, the union of the lines it covers, one
box per block and page: a paragraph cut into two chunks highlights only its own lines in each,
and a chunk that crosses a page keeps a box on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagle_rag.ingest.knowhere.tree import Block
from eagle_rag.ingest.pixelrag.geometry import BBox, union
from eagle_rag.plugins.payloads import PageBox


def chunk_boxes(blocks: Sequence[Block], start: int, end: int) -> list[dict[str, Any]]:
    """Boxes of the lines within ``[start, end)`` of the tree text, per block and page."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.end <= start or block.start >= end:
            continue
        covered: dict[int, list[BBox]] = {}
        for box in block.boxes:
            low, high = _span(block, box)
            if low < end and high > start:
                covered.setdefault(box.page, []).append(box.bbox)
        out.extend(_wire(page, union(items)) for page, items in sorted(covered.items()))
    return out


def section_boxes(blocks: Sequence[Block], extra: Sequence[PageBox] = ()) -> list[dict[str, Any]]:
    """A section summary's boxes: everything the given blocks (and ``extra`` boxes: the
    heading's) cover, one box per page."""
    covered: dict[int, list[BBox]] = {}
    for box in [*extra, *(box for block in blocks for box in block.boxes)]:
        covered.setdefault(box.page, []).append(box.bbox)
    return [_wire(page, union(items)) for page, items in sorted(covered.items())]


def _span(block: Block, box: PageBox) -> tuple[int, int]:
    low = block.start + (box.start or 0)
    high = block.start + (box.end if box.end is not None else len(block.text))
    return low, high


def _wire(page: int, bbox: BBox) -> dict[str, Any]:
    return PageBox(page, bbox).to_dict()
