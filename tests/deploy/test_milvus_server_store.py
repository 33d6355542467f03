"""A ``milvus-lite server`` started on an embedded store's ``milvus.db`` serves that store as is
(what ``benchmarks.biomed_retrieval --milvus-server`` relies on: the same rows, searched in a
process of their own)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from milvus_lite.server_manager import server_manager_instance

from deploy.topology import milvus_server
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, IndexSettings
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore

pytestmark = pytest.mark.integration

DIM = 8
TEXTS = [
    "aspirin lowers the risk of stroke",
    "metformin is a first line therapy for diabetes",
    "statins reduce cholesterol synthesis in the liver",
]


def _store(pool: MilvusClientPool) -> MilvusVectorStore:
    # A namespace with a database of its own, like a plugin's (biomed -> "biomed").
    store = MilvusVectorStore(
        pool,
        namespace="biomed",
        db_name="biomed",
        text_dim=DIM,
        visual_dim=DIM,
        index=IndexSettings(index_type="FLAT"),
    )
    store.ensure_collections()
    return store


def _vector(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).standard_normal(DIM)
    return [float(x) for x in vector / np.linalg.norm(vector)]


def _row(i: int, text: str) -> dict[str, object]:
    return {
        "id": f"kb:d{i}:0",
        "document_id": f"d{i}",
        "kb_name": "kb",
        "text": text,
        "path": "doc",
        "level": 1,
        "type": "text",
        "chunk_index": 0,
        "page_nums": [1],
        "metadata": {},
        "dense": _vector(i),
    }


def _searches(store: MilvusVectorStore) -> tuple[list[str], list[str]]:
    scope = f.eq("kb_name", "kb")
    sparse = store.search_sparse(TEXT_COLLECTION, ["statins cholesterol"], top_k=3, where=scope)
    dense = store.search_dense(TEXT_COLLECTION, [_vector(1)], top_k=3, where=scope)
    return [h.id for h in sparse[0]], [h.id for h in dense[0]]


def test_a_server_on_an_embedded_store_returns_what_the_embedded_store_returned(
    tmp_path: Path,
) -> None:
    embedded_pool = MilvusClientPool(str(tmp_path / "milvus.db"))
    embedded = _store(embedded_pool)
    embedded.upsert(TEXT_COLLECTION, [_row(i, t) for i, t in enumerate(TEXTS)])
    embedded.flush()
    expected = _searches(embedded)
    embedded_pool.close()
    # The embedded engine holds the store's lock until its process ends (the benchmark ingests
    # in one process and queries in the next); here it is let go by hand.
    server_manager_instance.release_server(str(tmp_path / "milvus.db"))
    assert expected[0][0] == "kb:d2:0" and expected[1][0] == "kb:d1:0"

    with milvus_server(tmp_path / "server", data_dir=tmp_path / "milvus.db") as (uri, _):
        pool = MilvusClientPool(uri)
        try:
            assert _searches(_store(pool)) == expected
        finally:
            pool.close()
