from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from eagle_rag.bootstrap import bootstrap, build_app
from eagle_rag.errors import VectorStoreError
from eagle_rag.index.collections import BASE_COLLECTIONS, DENSE_FIELD, TEXT_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.models.minilm import MiniLMEncoder
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import Settings, load_settings
from eagle_rag.storage.keys import object_key


def test_building_the_app_touches_no_backend(settings: Settings) -> None:
    build_app(settings)
    assert not settings.data_dir.exists()


async def test_start_migrates_creates_collections_and_loads_plugins(settings: Settings) -> None:
    app = await bootstrap(settings)
    try:
        assert app.database.revision() == "0002"
        assert set(BASE_COLLECTIONS) <= set(app.vectors.collections())
        assert [p.manifest.namespace for p in app.plugins.loaded] == ["core"]
        kb = app.repositories.knowledge_bases.create("docs")
        assert kb.namespace == "core"
        stored = app.objects.put(object_key(app.namespace, "docs", "d", "a.txt"), io.BytesIO(b"x"))
        assert stored.size == 1
    finally:
        await app.stop()
    # a second start on the same data finds everything in place (restart of the embedded default)
    again = await bootstrap(settings)
    try:
        assert [k.name for k in again.repositories.knowledge_bases.list()] == ["docs"]
    finally:
        await again.stop()


def test_encoder_and_collection_dimensions_must_agree(tmp_path: object) -> None:
    import pytest

    from eagle_rag.errors import SettingsError
    from eagle_rag.settings import load_settings

    settings = load_settings(
        {
            "EAGLE_DATA_DIR": str(tmp_path),
            "EAGLE_ENCODER_MODE": "deterministic",
            "EAGLE_EMBEDDING_DIM": "64",
        }
    )
    with pytest.raises(SettingsError, match=r"makes 64-d vectors but milvus\.text_dim is 384"):
        build_app(settings)


async def test_another_encoder_of_the_same_dimension_is_refused_or_reembeds(
    tmp_path: Path,
) -> None:
    """The hashing encoder and MiniLM both make 384-d vectors: switching after an ingest
    would rank by noise without an error, so start-up refuses, naming both, and loses nothing.
    With milvus.reembed_on_encoder_change the KBs are run through MiniLM instead."""
    hashing = {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_ENCODER_MODE": "deterministic"}
    app = await bootstrap(load_settings(hashing))
    try:
        app.repositories.knowledge_bases.create("docs")
        body = io.BytesIO(b"# Pump\n\nThe coolant pump runs at 2900 rpm.\n")
        app.ingest.submit_file(kb_name="docs", filename="pump.md", stream=body)
        await app.queue.join()  # type: ignore[attr-defined]
    finally:
        await app.stop()
    minilm = {"models": {"embedding": {"provider": "minilm", "encoder_mode": "require_native"}}}
    env = {"EAGLE_DATA_DIR": str(tmp_path)}
    with pytest.raises(VectorStoreError) as caught:
        await bootstrap(load_settings(env, overrides=minilm))
    assert caught.value.fields["collection"] == "eagle_text"
    assert "holds vectors of the encoder 'hashing-384'" in caught.value.message
    assert f"configured with {MiniLMEncoder.name!r}" in caught.value.message
    assert await _top_passage(load_settings(hashing)) == "2900 rpm"  # nothing lost

    reembed = {**minilm, "milvus": {"reembed_on_encoder_change": True}}
    switched = await bootstrap(load_settings(env, overrides=reembed))
    try:
        await switched.queue.join()  # type: ignore[attr-defined]
        rows = switched.vectors.query(
            TEXT_COLLECTION, eq("kb_name", "docs"), output_fields=["text", DENSE_FIELD]
        )
        expected = MiniLMEncoder().embed_passages([str(r["text"]) for r in rows])
        assert rows and np.allclose([r[DENSE_FIELD] for r in rows], expected, atol=1e-4)
    finally:
        await switched.stop()
    # MiniLM is recorded now: it starts without the option, the hashing encoder is refused.
    assert await _top_passage(load_settings(env, overrides=minilm)) == "2900 rpm"
    with pytest.raises(VectorStoreError, match="holds vectors of the encoder 'all-MiniLM"):
        await bootstrap(load_settings(hashing))


async def _top_passage(settings: Settings) -> str:
    app = await bootstrap(settings)
    try:
        pack = await app.retrieval.search(QueryRequest("coolant pump", kb_names=("docs",)))
        return "2900 rpm" if "2900 rpm" in pack.passages[0].text else pack.passages[0].text
    finally:
        await app.stop()
