from __future__ import annotations

import io

from eagle_rag.bootstrap import bootstrap, build_app
from eagle_rag.index.collections import BASE_COLLECTIONS
from eagle_rag.settings import Settings
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
