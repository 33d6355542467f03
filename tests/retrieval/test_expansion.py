"""Parent expansion on hand-made hit lists: which chunks a section summary drills down to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eagle_rag.index.filters import eq
from eagle_rag.plugins.payloads import QueryRequest, RetrievedHit
from eagle_rag.retrieval.expansion import ParentExpander
from eagle_rag.retrieval.relevance import relevance
from eagle_rag.retrieval.wire import search_response
from tests.embedded import app_with_documents


def _hit(
    chunk_id: str,
    path: str,
    score: float,
    *,
    summary: bool = False,
    relevance: float | None = None,
) -> RetrievedHit:
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
        scores={} if relevance is None else {"relevance": relevance},
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


@pytest.mark.asyncio
async def test_siblings_of_the_best_child_keep_their_own_relevance() -> None:
    """A manual's summary matched "reset router" (0.76); it drilled down to the reset chunk and
    to "Firmware updates", and both showed 0.76: an unrelated chunk level with the best hit and
    past any score threshold. The first child stands in for the summary; a sibling shows what it
    scored itself, or, found by the drill-down alone, the weakest candidate's."""
    summary = _hit("s", "Router", 0.9, summary=True, relevance=0.76)
    reset = _hit("a", "Router/Resetting", 0.8, relevance=0.66)
    firmware = _hit("b", "Router/Firmware", 0.5, relevance=0.07)
    other = _hit("x", "Kettle/Descaling", 0.4, relevance=0.12)
    unscored = _hit("c", "Router/Wi-Fi", 0.0)  # as the drill-down's own search returns it

    async def expand(
        children: int, ranked: list[RetrievedHit], *pool: RetrievedHit
    ) -> dict[str, float]:
        expander = ParentExpander(None, children=children, search_depth=0)
        output, _ = await expander.expand(
            ranked,
            pool,
            limit=4,
            queries={},
            vectors={},
            scope=eq("kb_name", "kb"),
        )
        return {h.chunk_id: relevance(h.scores) for h in output}

    ranked = [summary, reset, firmware, other]
    assert await expand(2, ranked) == {"a": 0.76, "b": 0.07, "x": 0.12}
    # Found by the drill-down alone, it ranked below every candidate: the weakest one's.
    assert await expand(2, [summary, reset, other], unscored) == {"a": 0.76, "c": 0.12, "x": 0.12}
    # A first child scored above its summary keeps its own.
    better = _hit("a", "Router/Resetting", 0.8, relevance=0.9)
    assert (await expand(1, [summary, better]))["a"] == 0.9


ROUTER = """# NetFast R9 Router Manual

## Resetting the router

To restore factory settings, press and hold the RESET button on the back panel for 12 seconds
until the power LED flashes amber.

## Wi-Fi bands

The R9 broadcasts on 2.4 GHz and 5 GHz, channels 36 to 165 on the 5 GHz band.

## Firmware updates

Firmware updates are checked nightly at 03:00 local time and can be disabled in the settings.
"""


@pytest.mark.asyncio
async def test_a_score_threshold_keeps_the_drilled_chunk_and_drops_its_unrelated_sibling(
    tmp_path: Path,
) -> None:
    """Through the real app: the manual's summary is the best hit for "reset router"; of the two
    chunks it drills down to, only the reset one passes a threshold of 0.3."""
    app = await app_with_documents(str(tmp_path), "kb", {"router_r9.md": ROUTER})
    try:
        request = QueryRequest(text="reset router", kb_names=("kb",), top_k=5)
        pack = await app.retrieval.search(request)
    finally:
        await app.stop()
    assert pack.passages[0].metadata.get("expanded_from")
    shown = search_response(pack)["sources"]["text"]
    assert shown[0]["path"].endswith("Resetting the router")
    passing = search_response(pack, score_threshold=0.3)["sources"]["text"]
    assert [s["path"] for s in passing] == [shown[0]["path"]]


def _handbook(sections: int) -> str:
    parts = ["# Kestrel Handbook\n"]
    for s in range(sections):
        parts.append(f"\n## Kestrel module {s}\n")
        parts += [
            f"\nThe Kestrel module {s} part {p} covers routine maintenance of the coolant loop, "
            f"step {p}.\n"
            for p in range(3)
        ]
    return "".join(parts)


@pytest.mark.asyncio
async def test_a_dropped_summary_leaves_no_gap_in_top_k(tmp_path: Path) -> None:
    """A summary whose chunks were listed already was dropped and nothing took its place: lists
    only max(top_k, candidates) deep left top_k=5 with 4 passages of the 6 chunks. The refill
    comes after what was ranked, which stays as it was."""
    app = await app_with_documents(str(tmp_path), "kb", {"kestrel.md": _handbook(6)}, candidates=5)
    try:

        async def search(top_k: int, **options: bool) -> list[str]:
            request = QueryRequest(text="Kestrel", kb_names=("kb",), top_k=top_k, **options)
            return [p.chunk_id for p in (await app.retrieval.search(request)).passages]

        four = await search(4)
        # The refill searches deeper with the query's vectors: it did embed the query again.
        embedded: list[str] = []
        for registered in app.registries.encoders:
            encoder = registered.component
            own = encoder.embed_queries

            def counted(texts: list[str], own: Any = own) -> Any:
                embedded.extend(texts)
                return own(texts)

            encoder.embed_queries = counted
        five = await search(5)
        assert embedded == ["Kestrel"]
        ten = await search(10)
        unexpanded = await app.retrieval.search(
            QueryRequest(text="Kestrel", kb_names=("kb",), top_k=10, expand_parents=False)
        )
    finally:
        await app.stop()
    chunks = [p.chunk_id for p in unexpanded.passages if p.type != "section_summary"]
    assert len(five) == 5 and len(set(five)) == 5
    assert five[:4] == four
    assert sorted(ten) == sorted(chunks)  # every chunk there is, each once
