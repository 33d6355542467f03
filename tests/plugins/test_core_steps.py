"""A domain plugin replaces each of Core's steps through the real app, one hook per test.

The app runs Core and ``tests.plugins.override_plugin`` (namespace ``probe``); each test switches
on one replacement, ingests or searches, and checks the plugin's answer is what the app used
while Core did every other step. A meta-test checks that every hook in the catalog has a Core
subscriber or a documented reason, and is exercised by some test through an app.
"""

from __future__ import annotations

import asyncio
import io
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.db.records import DocumentRecord
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.plugins import hooks
from eagle_rag.plugins.contract import CORE_NAMESPACE
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings
from tests.plugins.override_plugin import ENCODER, LINES, NAMESPACE, OverridePlugin
from tests.plugins.test_hook_catalog import SAMPLES

pytestmark = pytest.mark.asyncio(loop_scope="module")
ROOT = Path(__file__).resolve().parents[2]
NOTES = "# Notes\n\nThe inverter hums at night.\n\nPanels face south.\n"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    settings = load_settings(
        {
            "EAGLE_DATA_DIR": str(tmp_path_factory.mktemp("core-steps")),
            "EAGLE_ENCODER_MODE": "deterministic",
        },
        overrides={
            "plugins": {
                "enabled": ["eagle_rag.plugins.core_defaults", "tests.plugins.override_plugin"],
                "default_namespace": NAMESPACE,
            }
        },
    )
    application = await bootstrap(settings)
    yield application
    await application.stop()


@pytest.fixture
def probe(app: EagleApp) -> Iterator[OverridePlugin]:
    [loaded] = [p for p in app.plugins.loaded if p.manifest.namespace == NAMESPACE]
    plugin = loaded.plugin
    assert isinstance(plugin, OverridePlugin)
    yield plugin
    plugin.active.clear()
    plugin.rows.clear()


@pytest.fixture
def kb(app: EagleApp) -> str:
    name = f"kb-{uuid.uuid4().hex[:8]}"
    app.repositories.knowledge_bases.create(name)
    return name


async def ingest(app: EagleApp, kb: str, text: str = NOTES, **metadata: Any) -> DocumentRecord:
    submission = await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name=kb,
        filename="notes.md",
        stream=io.BytesIO(text.encode()),
        metadata=metadata,
    )
    await app.queue.join()  # type: ignore[attr-defined]
    return app.repositories.documents.get(submission.document_id)


def rows(app: EagleApp, document: DocumentRecord, *fields: str) -> list[dict[str, Any]]:
    where = f.eq("document_id", document.id)
    return app.vectors.query(TEXT_COLLECTION, where, output_fields=fields or None)


async def test_core_does_every_step_when_the_plugin_answers_nothing(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    document = await ingest(app, kb)
    assert document.status == "completed" and document.structure["pipeline"] == "knowhere"
    assert {r["path"] for r in rows(app, document)} >= {"Notes"}


async def test_route_selector_chooses_the_pipeline(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("route")
    document = await ingest(app, kb)
    assert document.status == "completed" and document.structure["pipeline"] == LINES
    found = rows(app, document)
    # the lines pipeline: one chunk per non-empty line, cut by the plugin, not by Knowhere
    assert sorted(r["text"] for r in found) == sorted(
        line for line in NOTES.splitlines() if line.strip()
    )
    assert {r["metadata"]["chunker"] for r in found} == {"probe"}


async def test_a_pipeline_nobody_provides_fails_the_document_clearly(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("route")
    document = await ingest(app, kb, pipeline="nowhere")
    assert document.status == "failed"
    assert "no plugin parses text/markdown for the 'nowhere' pipeline" in (document.error or "")
    assert rows(app, document) == []


async def test_parse_document_replaces_the_parser(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("parse")
    document = await ingest(app, kb)
    texts = [r["text"] for r in rows(app, document)]
    assert texts and all(t == t.upper() for t in texts)
    assert any("THE INVERTER HUMS AT NIGHT." in t for t in texts)


async def test_build_structure_replaces_the_tree(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("structure")
    document = await ingest(app, kb)
    assert document.structure["sections"][0]["path"] == "Probe Title"
    assert all(r["path"].startswith("Probe Title") for r in rows(app, document))


async def test_chunk_document_replaces_the_chunker(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("chunk")
    document = await ingest(app, kb)
    found = rows(app, document)
    assert {r["metadata"]["chunker"] for r in found} == {"probe"}
    assert all(r["id"].startswith(f"{document.id}-line-") for r in found)


async def test_classify_chunk_picks_the_encoder(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("classify")
    document = await ingest(app, kb)
    encoder = app.registries.encoders.get(ENCODER)
    for row in rows(
        app, document, "text", "dense"
    ):  # Core's EMBED_TEXT embedded with the encoder chosen
        expected = encoder.embed_passages([row["text"]])[0]
        assert np.allclose(row["dense"], expected, atol=1e-5)


async def test_embed_text_replaces_the_embedding(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("embed")
    document = await ingest(app, kb)
    assert probe.encoder is not None
    host = app.text_encoder
    for row in rows(app, document, "text", "dense"):
        assert np.allclose(row["dense"], probe.encoder.embed_passages([row["text"]])[0], atol=1e-5)
        assert not np.allclose(row["dense"], host.embed_passages([row["text"]])[0], atol=1e-5)


async def test_upsert_vectors_replaces_the_store(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    probe.active.add("upsert")
    document = await ingest(app, kb)
    assert document.status == "completed" and document.chunk_count == len(probe.rows) > 0
    assert rows(app, document) == []  # Core saw written_ids and did not write again
    assert {row["document_id"] for row in probe.rows} == {document.id}


async def test_classify_query_replaces_the_route(
    app: EagleApp, kb: str, probe: OverridePlugin
) -> None:
    await ingest(app, kb)
    core = await app.retrieval.search(QueryRequest("inverter", kb_names=(kb,)))
    assert core.route is not None and core.route.classifier == CORE_NAMESPACE
    probe.active.add("classify_query")
    pack = await app.retrieval.search(QueryRequest("inverter", kb_names=(kb,)))
    assert pack.route is not None and pack.route.classifier == NAMESPACE
    steps = {s.name: s for s in pack.steps}
    assert steps["eagle_text:dense"].status == "skipped"  # the plugin's plan is BM25 only
    assert "inverter" in pack.passages[0].text


# --- meta: every hook has Core's answer or a reason, docs, and a test through an app ---------

DOCS = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
CORE_ROWS = dict(re.findall(r"^\| `([A-Z_]+)` \| (subscribes|none) \| .+\|$", DOCS, re.MULTILINE))
# Exercised through the bus only (tests/plugins/test_hook_catalog.py): PixelRAG wires the visual
# ingest path end to end; until then no app produces a visual record to classify or embed.
VISUAL_ONLY = {"INGEST_VISUAL_EXTRACT", "CLASSIFY_VISUAL", "EMBED_VISUAL"}


@pytest.mark.parametrize("spec", hooks.CATALOG, ids=lambda s: s.name)
async def test_core_subscribes_or_the_docs_say_why_not(
    spec: hooks.HookSpec[Any], app: EagleApp
) -> None:
    core = [s for s in app.bus.subscribers(spec) if s.plugin == CORE_NAMESPACE]
    assert spec.name in CORE_ROWS, f"docs/hooks.md has no Core row for {spec.name}"
    assert CORE_ROWS[spec.name] == ("subscribes" if core else "none")


@pytest.mark.parametrize("spec", hooks.CATALOG, ids=lambda s: s.name)
async def test_every_hook_is_exercised_through_an_app(spec: hooks.HookSpec[Any]) -> None:
    stub = f"hooks.{spec.name.lower()}"
    catalog_test = Path(__file__).with_name("test_hook_catalog.py")
    users = [
        path
        for path in (ROOT / "tests").rglob("*.py")
        if path != catalog_test and re.search(rf"{re.escape(stub)}\b", path.read_text("utf-8"))
    ]
    if spec.name in VISUAL_ONLY:
        assert spec.name in SAMPLES  # exercised through the bus by the catalog test
        return
    assert users, f"no test outside the catalog test uses {stub}"
