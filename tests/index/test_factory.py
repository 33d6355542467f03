from __future__ import annotations

from eagle_rag.index.factory import build_pool, build_vector_store, index_settings
from eagle_rag.settings import MilvusSettings, load_settings


def test_auto_index_is_flat_on_lite_and_hnsw_on_a_server() -> None:
    config = MilvusSettings()
    assert config.index_type == "AUTO"
    assert index_settings(config, lite=True).index_type == "FLAT"
    assert index_settings(config, lite=False).index_type == "HNSW"
    pinned = config.model_copy(update={"index_type": "HNSW", "search_ef": 300})
    chosen = index_settings(pinned, lite=True)
    assert (chosen.index_type, chosen.search_params(10)) == ("HNSW", {"ef": 300})


def test_store_is_bound_to_the_namespace_database(tmp_path: object) -> None:
    settings = load_settings({"EAGLE_DATA_DIR": str(tmp_path), "PLUGIN_NAMESPACE": "x"})
    pool = build_pool(settings.milvus)
    assert pool.lite and pool.uri.endswith("milvus.db")
    for namespace, database in [("core", "default"), ("lakehouse-bi", "lakehouse_bi")]:
        store = build_vector_store(settings.milvus, pool, namespace)
        assert (store.namespace, store.db_name) == (namespace, database)
    server = build_pool(settings.milvus.model_copy(update={"uri": "http://127.0.0.1:19530"}))
    assert not server.lite
