"""Options the default profile leaves off, through the real app: ``default_dual_text_search``
and ``exploratory_search_collections`` (one that exists, one that does not)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.errors import EagleError
from eagle_rag.index.collections import TEXT_COLLECTION, CollectionSpec
from eagle_rag.index.filters import eq
from eagle_rag.plugins.payloads import QueryRequest
from plugins.biomed.collection import FIELD_CHARS, collection_spec
from tests.inrepo_plugins.test_biomed_app import (
    BIOMED,
    COLLECTION,
    METFORMIN,
    PLAIN,
    biomed_settings,
    plugin_of,
)

TRIALS = "eagle_text_trials"  # a text collection another tool filled in this Database
MISSING = "no_such_collection"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    data = tmp_path_factory.mktemp("biomed-options")
    first = await bootstrap(biomed_settings(data))
    dim = first.encoders.collection_dim(COLLECTION)
    first.vectors.ensure_collections([collection_spec(TRIALS, dim, "another-tool")])
    await first.stop()
    options = {
        "default_dual_text_search": True,
        "exploratory_search_collections": [TRIALS, MISSING],
    }
    application = await bootstrap(biomed_settings(data, **options))
    application.repositories.knowledge_bases.create("med")
    for name, text in (("metformin.md", METFORMIN), ("plain.md", PLAIN)):
        application.ingest.submit_file(
            kb_name="med", filename=name, stream=io.BytesIO(text.encode())
        )
    await application.queue.join()  # type: ignore[attr-defined]
    yield application
    await application.stop()


@pytest.mark.asyncio(loop_scope="module")
async def test_a_missing_exploratory_collection_is_skipped_with_a_warning(app: EagleApp) -> None:
    assert plugin_of(app).runtime.exploratory == (TRIALS,)
    [decision] = [d for d in app.audit.recent(100) if d.category == "exploratory_collections"]
    assert (decision.plugin, decision.decision) == (BIOMED, "skipped")
    assert decision.details["missing"] == [MISSING]


@pytest.mark.asyncio(loop_scope="module")
async def test_an_entity_query_also_searches_the_existing_exploratory_collection(
    app: EagleApp,
) -> None:
    pack = await app.retrieval.search(QueryRequest("Does metformin prevent gastric cancer?"))
    assert pack.route is not None and pack.route.classifier == BIOMED
    assert [p.collection for p in pack.route.plans] == [TEXT_COLLECTION, COLLECTION, TRIALS]
    steps = {s.name: s.status for s in pack.steps}
    assert steps[f"{TRIALS}:sparse"] == steps[f"{TRIALS}:dense"] == "ok"  # rows of its own
    assert "error" not in steps.values() and not any(MISSING in name for name in steps)
    assert pack.passages[0].filename == "metformin.md"


@pytest.mark.asyncio(loop_scope="module")
async def test_dual_text_search_also_routes_entity_free_queries_to_the_view(
    app: EagleApp,
) -> None:
    pack = await app.retrieval.search(QueryRequest("blue folder for the Tuesday meeting"))
    assert pack.route is not None and pack.route.classifier == BIOMED
    assert "dual text search" in pack.route.reason
    assert [p.collection for p in pack.route.plans][:2] == [TEXT_COLLECTION, COLLECTION]
    assert pack.passages[0].filename == "plain.md"  # it lives in eagle_text only
    assert "reranked by a plugin" not in {s.detail for s in pack.steps}  # no entity: no signal


async def test_an_exploratory_collection_of_another_dimension_is_refused(tmp_path: Path) -> None:
    first = await bootstrap(biomed_settings(tmp_path))
    first.vectors.ensure_collections([CollectionSpec(TRIALS, "text", 64)])
    await first.stop()
    with pytest.raises(EagleError) as caught:
        await bootstrap(biomed_settings(tmp_path, exploratory_search_collections=[TRIALS]))
    assert TRIALS in caught.value.message and "64-d" in caught.value.message


async def test_a_ten_thousand_entity_abstract_is_ingested_with_capped_entity_fields(
    tmp_path: Path,
) -> None:
    """Through submit_file: every chunk keeps at most max_chunk_entities ids, and the view
    row's scalar field (at most FIELD_CHARS bytes) holds whole ids only."""
    app = await bootstrap(biomed_settings(tmp_path, max_chunk_entities=200))
    try:
        lexicon = plugin_of(app).runtime.finder.lexicon
        names = [c.name for c in list(lexicon.concepts.values())[:10_000]]
        abstract = "# Abstract\n\n" + ". ".join(names) + ".\n"
        app.repositories.knowledge_bases.create("big", creation_settings={"chunk_size": 4096})
        submission = app.ingest.submit_file(
            kb_name="big", filename="abstract.md", stream=io.BytesIO(abstract.encode())
        )
        await app.queue.join()  # type: ignore[attr-defined]
        document = app.repositories.documents.get(submission.document_id)
        assert document.status == "completed", document.error
        where = eq("document_id", document.id)
        base = app.vectors.query(TEXT_COLLECTION, where)
        view = {r["id"]: r for r in app.vectors.query(COLLECTION, where)}
        assert len(base) == document.chunk_count and set(view) == {r["id"] for r in base}
        for row in base:
            ids = row["metadata"]["biomed_entities"]
            assert 0 < len(ids) <= 200
            field = view[row["id"]]["biomed_entities"]
            assert len(field.encode()) <= FIELD_CHARS
            assert field.split() == ids[: len(field.split())]  # whole ids, in order
        capped = [r for r in base if len(r["metadata"]["biomed_entities"]) == 200]
        assert capped  # the list was capped, and its scalar field cut at a whole id
        assert len(view[capped[0]["id"]]["biomed_entities"].split()) < 200
    finally:
        await app.stop()
