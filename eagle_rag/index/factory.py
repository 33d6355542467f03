"""Build the vector store of the instance namespace from settings (no I/O until first use)."""

from __future__ import annotations

from eagle_rag.index.collections import IndexSettings
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore
from eagle_rag.plugins.contract import milvus_database_for
from eagle_rag.settings import MilvusSettings


def build_pool(config: MilvusSettings) -> MilvusClientPool:
    return MilvusClientPool(
        config.uri, token=config.token.get_secret_value(), timeout=config.timeout_s
    )


def index_settings(config: MilvusSettings, *, lite: bool) -> IndexSettings:
    """Resolve ``AUTO``: exact FLAT on Milvus Lite, HNSW on a server."""
    index_type = config.index_type
    if index_type == "AUTO":
        index_type = "FLAT" if lite else "HNSW"
    return IndexSettings(
        index_type=index_type,
        hnsw_m=config.hnsw_m,
        hnsw_ef_construction=config.hnsw_ef_construction,
        search_ef=config.search_ef,
    )


def build_vector_store(
    config: MilvusSettings,
    pool: MilvusClientPool,
    namespace: str,
    *,
    text_encoder: str = "",
    visual_encoder: str = "",
) -> MilvusVectorStore:
    """The store of ``namespace``: its own Milvus Database (ADR-001). The encoders' names are
    recorded on the base collections and checked against them on start ("" checks nothing:
    a migration copies vectors without embedding any)."""
    return MilvusVectorStore(
        pool,
        namespace=namespace,
        db_name=config.db_name or milvus_database_for(namespace),
        text_dim=config.text_dim,
        visual_dim=config.visual_dim,
        index=index_settings(config, lite=pool.lite),
        text_encoder=text_encoder,
        visual_encoder=visual_encoder,
        reembed_on_encoder_change=config.reembed_on_encoder_change,
    )
