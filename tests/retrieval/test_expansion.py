"""Parent expansion on hand-made hit lists: which chunks a section summary drills down to."""

from __future__ import annotations

import pytest

from eagle_rag.index.filters import eq
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.expansion import ParentExpander


def _hit(chunk_id: str, path: str, score: float, *, summary: bool = False) -> RetrievedHit:
    return RetrievedHit(
        chunk_id=chunk_id,
        collection="eagle_text",
        document_id="doc",
        kb_name="kb",
        text=f"text of {path}",
        path=path,
        score=score,
        source_chunk_id=chunk_id,
        metadata={"type": "section_summary" if summary else "text"},
    )


@pytest.mark.asyncio
async def test_a_chunk_ranked_below_its_summary_moves_up_to_the_summary_rank() -> None:
    """The summary of "4 Warranty" ranked first and its own chunk, matched on its own, third:
    the drill-down skipped every listed chunk and put an unmatched one of the section first."""
    summary = _hit("s", "Guide/4 Warranty", 0.9, summary=True)
    other = _hit("x", "Guide/2 Wiring", 0.8)
    listed = _hit("a", "Guide/4 Warranty/4.1 Terms", 0.7)
    unmatched = _hit("b", "Guide/4 Warranty/4.2 Claims", 0.1)
    expander = ParentExpander(None, children=1, search_depth=0)
    output, expanded = await expander.expand(
        [summary, other, listed],
        [summary, other, listed, unmatched],
        limit=3,
        queries={},
        vectors={},
        scope=eq("kb_name", "kb"),
    )
    assert expanded == 1
    assert [h.chunk_id for h in output] == ["a", "x"]
    assert output[0].metadata["expanded_from"] == "s"


@pytest.mark.asyncio
async def test_a_summary_whose_chunks_are_listed_above_it_is_dropped() -> None:
    first = _hit("a", "Guide/4 Warranty/4.1 Terms", 0.9)
    summary = _hit("s", "Guide/4 Warranty", 0.8, summary=True)
    expander = ParentExpander(None, children=1, search_depth=0)
    output, _ = await expander.expand(
        [first, summary],
        [first, summary],
        limit=3,
        queries={},
        vectors={},
        scope=eq("kb_name", "kb"),
    )
    assert [h.chunk_id for h in output] == ["a"]
