"""Vector store benchmark: upsert rows/s, filtered dense search p50/p95 and recall@10.

For each collection size, FLAT (the baseline), HNSW with the configured build and search settings,
and HNSW with a raised ef are measured in the same run, on the same rows and queries, through
MilvusVectorStore (so BM25 encoding, row preparation and the final flush are part of the upsert
cost). The index that ``milvus.index_type: AUTO`` picks for this backend is marked. Recall@10 is
against exact cosine search over the filtered rows (numpy). Filters: none, one that keeps 10% of
rows, one that keeps 200 rows.

    .venv/bin/python -m benchmarks.vector_search --sizes 10000 100000 --queries 100
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pymilvus

from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, IndexSettings
from eagle_rag.index.factory import index_settings
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore
from eagle_rag.settings import MilvusSettings

DIM = 384
TOP_K = 10
KB_GROUPS = 10  # kb_name == "kb-3" keeps 10% of rows
SMALL_DOC_ROWS = 200  # document_id == "doc-small" keeps 200 rows


def embedding_like(rows: int, seed: int, centroids: np.ndarray) -> np.ndarray:
    """Unit vectors clustered around topic centroids, like sentence embeddings of a corpus."""
    rng = np.random.default_rng(seed)
    topics = rng.integers(0, len(centroids), rows)
    vectors = centroids[topics] + rng.standard_normal((rows, DIM)).astype(np.float32) * 0.35
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def make_rows(vectors: np.ndarray) -> list[dict[str, Any]]:
    rows = []
    for i, vector in enumerate(vectors):
        small = i % (len(vectors) // SMALL_DOC_ROWS) == 0
        rows.append(
            {
                "id": f"r{i}",
                "document_id": "doc-small" if small else f"doc-{i // 50}",
                "kb_name": f"kb-{i % KB_GROUPS}",
                "text": f"row {i}",
                "path": "doc",
                "level": 1,
                "type": "text",
                "chunk_index": i,
                "page_nums": [1],
                "metadata": {},
                "dense": vector,
            }
        )
    return rows


@dataclass
class Figures:
    index: str
    rows: int
    upsert_rows_per_s: float
    results: dict[str, dict[str, float]]


def exact_top_k(vectors: np.ndarray, mask: np.ndarray, query: np.ndarray) -> set[str]:
    candidates = np.flatnonzero(mask)
    scores = vectors[candidates] @ query
    best = candidates[np.argsort(-scores)[:TOP_K]]
    return {f"r{i}" for i in best}


def measure(
    index: IndexSettings, vectors: np.ndarray, rows: list[dict[str, Any]], queries: np.ndarray
) -> Figures:
    with tempfile.TemporaryDirectory() as tmp:
        pool = MilvusClientPool(str(Path(tmp) / "milvus.db"))
        store = MilvusVectorStore(
            pool, namespace="bench", db_name="bench", text_dim=DIM, visual_dim=DIM, index=index
        )
        store.ensure_collections()
        started = time.perf_counter()
        store.upsert(TEXT_COLLECTION, rows)
        store.flush([TEXT_COLLECTION])  # part of writing: searches need sealed segments
        upsert_rate = len(rows) / (time.perf_counter() - started)
        kb = np.array([r["kb_name"] == "kb-3" for r in rows])
        small = np.array([r["document_id"] == "doc-small" for r in rows])
        cases = {
            "unfiltered": (None, np.ones(len(rows), dtype=bool)),
            "filter_10pct": (f.eq("kb_name", "kb-3"), kb),
            f"filter_{int(small.sum())}_rows": (f.eq("document_id", "doc-small"), small),
        }
        results = {}
        for name, (where, mask) in cases.items():
            store.search_dense(TEXT_COLLECTION, [queries[0]], top_k=TOP_K, where=where)  # warm
            latencies, recalls = [], []
            for query in queries:
                t0 = time.perf_counter()
                [hits] = store.search_dense(TEXT_COLLECTION, [query], top_k=TOP_K, where=where)
                latencies.append((time.perf_counter() - t0) * 1000)
                truth = exact_top_k(vectors, mask, query)
                recalls.append(len(truth & {h.id for h in hits}) / len(truth))
            latencies.sort()
            results[name] = {
                "p50_ms": statistics.median(latencies),
                "p95_ms": latencies[int(0.95 * (len(latencies) - 1))],
                "recall_at_10": float(np.mean(recalls)),
            }
        pool.close()
    return Figures(index.index_type, len(rows), upsert_rate, results)


def candidates() -> dict[str, IndexSettings]:
    config = MilvusSettings()
    hnsw = index_settings(config.model_copy(update={"index_type": "HNSW"}), lite=True)
    return {
        "FLAT": IndexSettings(index_type="FLAT"),
        f"HNSW ef={hnsw.search_ef}": hnsw,
        "HNSW ef=1024": IndexSettings(
            index_type="HNSW",
            hnsw_m=hnsw.hnsw_m,
            hnsw_ef_construction=hnsw.hnsw_ef_construction,
            search_ef=1024,
        ),
    }


def report(size: int, figures: dict[str, Figures], auto: str) -> None:
    flat = figures["FLAT"]
    print(f"\n== {size:,} rows ==  (AUTO picks {auto} on Milvus Lite)")
    print(f"{'index':<15}{'upsert rows/s':>14}{'ratio':>7}")
    for name, fig in figures.items():
        ratio = fig.upsert_rows_per_s / flat.upsert_rows_per_s
        print(f"{name:<15}{fig.upsert_rows_per_s:>14,.0f}{ratio:>7.2f}")
    print(f"{'filter':<18}{'index':<15}{'p50 ms':>9}{'p95 ms':>9}{'recall@10':>11}{'p50/FLAT':>10}")
    for case in flat.results:
        for name, fig in figures.items():
            r = fig.results[case]
            ratio = r["p50_ms"] / flat.results[case]["p50_ms"]
            print(
                f"{case:<18}{name:<15}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
                f"{r['recall_at_10']:>11.3f}{ratio:>10.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} cores")
    print(f"python {platform.python_version()}, pymilvus {pymilvus.__version__}, Milvus Lite")
    auto = index_settings(MilvusSettings(), lite=True).index_type
    centroids = np.random.default_rng(7).standard_normal((256, DIM)).astype(np.float32)
    everything = []
    for size in args.sizes:
        vectors = embedding_like(size, seed=size, centroids=centroids)
        queries = embedding_like(args.queries, seed=size + 1, centroids=centroids)
        rows = make_rows(vectors)
        figures = {name: measure(ix, vectors, rows, queries) for name, ix in candidates().items()}
        report(size, figures, auto)
        everything += [{"name": name, **asdict(fig)} for name, fig in figures.items()]
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2))


if __name__ == "__main__":
    main()
