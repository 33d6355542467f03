"""A fresh Milvus Lite store's first start: quiet, and every collection indexed and loaded."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from eagle_rag.index.collections import (
    DENSE_FIELD,
    SPARSE_FIELD,
    TEXT_COLLECTION,
    VISUAL_COLLECTION,
)
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore


def test_a_fresh_lite_store_starts_without_grpc_errors_and_with_every_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Milvus Lite's gRPC server runs in this process: its ERROR records reach caplog.
    pool = MilvusClientPool(str(tmp_path / "milvus.db"))
    store = MilvusVectorStore(pool, namespace="core", db_name="default", text_dim=8, visual_dim=8)
    try:
        with caplog.at_level(logging.WARNING):
            store.ensure_collections()
        client = pool.client("default")
        indexes = {name: set(client.list_indexes(name)) for name in store.collections()}
        loaded = {name: str(client.get_load_state(name)["state"]) for name in indexes}
    finally:
        pool.close()

    grpc_errors = [
        r.getMessage() for r in caplog.records if r.name.startswith("grpc") and r.levelno >= 40
    ]
    assert grpc_errors == []
    assert indexes == {
        TEXT_COLLECTION: {DENSE_FIELD, SPARSE_FIELD, "document_id", "kb_name", "type"},
        VISUAL_COLLECTION: {
            DENSE_FIELD,
            SPARSE_FIELD,
            "document_id",
            "kb_name",
            "chunk_type",
            "image_id",
        },
    }
    assert set(loaded.values()) == {"Loaded"}
