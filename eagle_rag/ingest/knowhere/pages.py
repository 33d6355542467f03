"""Where on which page a piece of a block is: chunks of paged sources stop at page breaks.

A block's ``page`` is the page it starts on; its boxes (one per line, with the line's span of
the block's text) say where every line is. A chunk packed across a page break would be cited
by its first page while part of its words are on the next, so the chunker cuts at the break
(a sentence that runs over it stays whole, on the page where it starts).
"""

from __future__ import annotations

from collections.abc import Sequence

from eagle_rag.ingest.knowhere.tree import Block


def page_at(block: Block, offset: int) -> int | None:
    """The page of the line holding ``offset`` (relative to the block's text)."""
    for box in block.boxes:
        start = box.start or 0
        end = box.end if box.end is not None else len(block.text)
        if start <= offset < end:
            return box.page
    return block.page


def pages_of(blocks: Sequence[Block]) -> set[int]:
    """Every page the blocks' lines are on."""
    found: set[int] = set()
    for block in blocks:
        found.update(box.page for box in block.boxes)
        if block.page is not None:
            found.add(block.page)
    return found
