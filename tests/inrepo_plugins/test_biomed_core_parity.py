"""A query that names no entity gets, on the biomed profile, exactly the core profile's results.

Two real apps (core profile, biomed profile) ingest one mixed corpus: documents that name
lexicon entities (the biomed view copies them) and ones that name none, sharing many words so
that BM25 statistics matter. Every entity-free query must return the same passages in the same
order with the same scores on both, whatever the mode. (With the earlier layout, entity-bearing
chunks moved to the specialized collection and this failed: 7 of 24 msmarco queries kept
Core's top 10.)
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings
from tests.inrepo_plugins.test_biomed_app import METFORMIN, PLAIN, STATIN, biomed_settings

COLLECTION = "eagle_text_biomed"

# Plain documents that share words with the medical ones (patients, study, lower, results).
MEETING = """# Study group

## Results
The study group met on Tuesday; fewer patients in the waiting room meant a lower noise level.
The results of the survey on the printer were shared in the blue folder.
"""
KITCHEN = """# Kitchen rota

Use was associated with a lower number of cups left in the sink. The aim of this rota was to
determine whether the common room stays tidy when each team enrolled in it.
"""
CORPUS = {
    "metformin.md": METFORMIN,
    "statin.md": STATIN,
    "plain.md": PLAIN,
    "meeting.md": MEETING,
    "kitchen.md": KITCHEN,
}
# Each names no lexicon entity (asserted below) but matches words of both kinds of document.
QUERIES = (
    "lower results of the study",
    "fewer patients met on Tuesday",
    "patients enrolled in a retrospective cohort",
    "the aim of this rota was to determine whether",
    "blue folder for the Tuesday meeting",
    "use was associated with a lower number",
    "common room",
)


async def _ingested(settings: Any) -> EagleApp:
    app = await bootstrap(settings)
    app.repositories.knowledge_bases.create("mixed")
    for name, text in CORPUS.items():
        app.ingest.submit_file(kb_name="mixed", filename=name, stream=io.BytesIO(text.encode()))
    await app.queue.join()
    await app.flush_vectors()
    return app


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pair(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, EagleApp]]:
    core_settings = load_settings(
        {
            "EAGLE_DATA_DIR": str(tmp_path_factory.mktemp("parity-core")),
            "EAGLE_ENCODER_MODE": "deterministic",
        },
        overrides={"ingest": {"chunk_size": 64, "chunk_overlap": 4}},
    )
    apps = {
        "core": await _ingested(core_settings),
        "biomed": await _ingested(biomed_settings(tmp_path_factory.mktemp("parity-biomed"))),
    }
    yield apps
    for app in apps.values():
        await app.stop()


# Dense scores are float32 inner products: the same vectors give scores that differ in the 7th
# digit when the embedder batched the texts differently, so equal means equal at this precision.
SCORE_TOLERANCE = 1e-5


def _ranking(pack: Any) -> list[tuple[float, list[tuple[str, str, str]]]]:
    """The passages in order, as runs of equal plan scores (the rescaled dense and BM25 scores
    fused, which do not depend on ranks): two chunks of equal BM25 score are ranked in an order
    that follows their chunk ids, random per app, so such a tie is compared as a set."""
    runs: list[tuple[float, list[tuple[str, str, str]]]] = []
    for p in pack.passages:
        score = float(p.scores.get("plan_fused", p.score))
        item = (p.filename, p.path, p.text)
        if runs and abs(runs[-1][0] - score) <= SCORE_TOLERANCE:
            runs[-1][1].append(item)
        else:
            runs.append((score, [item]))
    return [(score, sorted(items)) for score, items in runs]


def _assert_same_ranking(biomed: Any, core: Any, text: str) -> None:
    got, want = _ranking(biomed), _ranking(core)
    assert [items for _, items in got] == [items for _, items in want], text
    assert [s for s, _ in got] == pytest.approx([s for s, _ in want], abs=SCORE_TOLERANCE), text


@pytest.mark.asyncio(loop_scope="module")
async def test_the_corpus_has_both_kinds_of_document(pair: dict[str, EagleApp]) -> None:
    biomed = pair["biomed"]
    viewed = {r["document_id"] for r in biomed.vectors.query(COLLECTION, eq("kb_name", "mixed"))}
    names = {d.id: d.filename for d in biomed.repositories.documents.list(kb_name="mixed")}
    viewed_names = {names[i] for i in viewed}
    assert {"metformin.md", "statin.md"} <= viewed_names
    assert {"plain.md", "kitchen.md"}.isdisjoint(viewed_names)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
@pytest.mark.parametrize("rerank", [None, False])
async def test_unrouted_queries_return_cores_results(
    pair: dict[str, EagleApp], mode: str, rerank: bool | None
) -> None:
    seen_medical = False
    for text in QUERIES:
        # Deeper than the corpus's chunk count: no tie is cut at the end of the list.
        request = QueryRequest(text, kb_names=("mixed",), top_k=50, mode=mode, rerank=rerank)
        core = await pair["core"].retrieval.search(request)
        biomed = await pair["biomed"].retrieval.search(request)
        assert biomed.route is not None and biomed.route.classifier == "core", text
        assert [p.collection for p in biomed.route.plans] == [TEXT_COLLECTION]
        _assert_same_ranking(biomed, core, text)
        seen_medical |= any(p.filename in ("metformin.md", "statin.md") for p in core.passages)
    assert seen_medical  # the queries reach entity-bearing documents, not only plain ones


@pytest.mark.asyncio(loop_scope="module")
async def test_an_entity_query_adds_the_view_and_still_sees_every_document(
    pair: dict[str, EagleApp], tmp_path: Path
) -> None:
    request = QueryRequest("metformin and the study group", kb_names=("mixed",), top_k=10)
    pack = await pair["biomed"].retrieval.search(request)
    assert pack.route is not None and pack.route.classifier == "biomed"
    assert [p.collection for p in pack.route.plans] == [TEXT_COLLECTION, COLLECTION]
    found = [p.filename for p in pack.passages]
    # The two documents' summaries lead the fused list ("Study group" first, then "Metformin
    # and gastric cancer"), and each drills down at its own rank to its chunks.
    assert found[:3] == ["meeting.md", "metformin.md", "metformin.md"]
    assert len({(p.document_id, p.path) for p in pack.passages}) == len(pack.passages)  # deduped
