"""The answer's step trace gives each stage its own time: the UI showed "route 561 ms → recall
561 ms" for every answer, both timed from the search's start to its end."""

from __future__ import annotations

import time

from eagle_rag.generation.engine import _recall_steps
from eagle_rag.retrieval.pack import ContextPack, Step


def test_route_and_recall_each_show_their_own_time() -> None:
    steps = (
        Step("scope", "ok", ms=2.0),
        Step("classify_query", "ok", ms=3.0),
        Step("eagle_text:dense", "ok", ms=300.0),
        Step("rerank", "ok", ms=100.0),
    )
    pack = ContextPack("q", (), None, steps, ("kb",))
    started = time.perf_counter() - 0.5  # the search began half a second ago
    route, recall = _recall_steps(pack, started, (), "q")
    assert route["name"] == "route" and route["ms"] == 5.0
    # The rest of the search, less its rerank (a step of its own in the trace).
    assert recall["name"] == "recall" and 395.0 <= recall["ms"] < 450.0
    assert recall["trace"] == ["scope", "classify_query", "eagle_text:dense", "rerank"]
