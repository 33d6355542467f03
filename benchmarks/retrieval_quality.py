"""Retrieval quality and speed on BEIR datasets: `eagle-rag eval` plus a top-10 latency check.

For each dataset, in one run on the embedded default (temporary data dir):

- `Evaluator` (the code behind `eagle-rag eval`) ingests the corpus and scores dense, sparse and
  hybrid retrieval at depth 100. Target (issue 5): hybrid nDCG@10 >= max(dense, sparse).
- Latency, as ratios against a baseline measured in the same run: p50 of a full hybrid search
  (no reranker, no LLM; parent expansion on, as users get it) vs p50 of one query embedding plus
  one dense Milvus search of the same depth, the two interleaved query by query so that load
  on the machine hits both alike. Target: <= 1.5. Measured at top_k = 10 (what an agent asks
  for) and at top_k = 100 (the evaluation's depth).

    .venv/bin/python -m benchmarks.retrieval_quality ../shared/datasets/*
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.metrics import percentile
from eagle_rag.evaluation.runner import Evaluator
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings

LATENCY_QUERIES = 200


async def latency_at(app: EagleApp, kb: str, texts: list[str], top_k: int) -> tuple[float, float]:
    """(baseline p50, hybrid search p50) in ms over ``texts``, interleaved query by query."""
    baseline, full = [], []
    where = eq("kb_name", kb)
    for text in texts:
        started = time.perf_counter()
        vector = await asyncio.to_thread(app.text_encoder.embed_queries, [text])
        await asyncio.to_thread(
            app.vectors.search_dense, TEXT_COLLECTION, vector.tolist(), top_k=top_k, where=where
        )
        baseline.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await app.retrieval.search(QueryRequest(text, kb_names=(kb,), top_k=top_k))
        full.append((time.perf_counter() - started) * 1000)
    return percentile(baseline, 50), percentile(full, 50)


async def run(folder: Path, max_queries: int | None) -> dict[str, Any]:
    dataset = load_dataset(folder)
    with tempfile.TemporaryDirectory(prefix="eagle-bench-") as data:
        app = await bootstrap(load_settings({**os.environ, "EAGLE_DATA_DIR": data}))
        try:
            report = await Evaluator(app, keep=True).run(
                dataset, modes=("dense", "sparse", "hybrid"), max_queries=max_queries
            )
            kb = next(k.name for k in app.repositories.knowledge_bases.list())
            texts = list(dataset.queries.values())[:LATENCY_QUERIES]
            latency = {depth: await latency_at(app, kb, texts, depth) for depth in (10, 100)}
        finally:
            await app.stop()
    result = report.to_dict()
    for depth, (baseline, full) in latency.items():
        result[f"top{depth}_baseline_p50_ms"] = round(baseline, 2)
        result[f"top{depth}_hybrid_p50_ms"] = round(full, 2)
    return result


def summarize(result: dict[str, Any]) -> None:
    modes = {m["mode"]: m for m in result["modes"]}
    ndcg = {name: m["metrics"]["ndcg@10"] for name, m in modes.items()}
    best_single = max(ndcg["dense"], ndcg["sparse"])
    print(
        f"\n{result['dataset']}: {result['documents']} docs → {result['chunks']} chunks, "
        f"{result['queries']} queries, ingest {result['ingest_docs_per_s']} docs/s, "
        f"encoder {result['encoder']}, hybrid fusion {result['hybrid_fusion']}"
    )
    print(
        f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} {'Hit@5':>7} "
        f"{'p50 ms':>8} {'p95 ms':>8}"
    )
    for name, m in modes.items():
        x = m["metrics"]
        print(
            f"{name:8} {x['ndcg@10']:8.4f} {x['recall@10']:7.4f} {x['recall@100']:7.4f} "
            f"{x['mrr@10']:7.4f} {x['hit@5']:7.4f} {m['p50_ms']:8.1f} {m['p95_ms']:8.1f}"
        )
    print(f"hybrid nDCG@10 / best single mode: {ndcg['hybrid'] / best_single:.3f}  (target >= 1)")
    for depth in (10, 100):
        full, base = result[f"top{depth}_hybrid_p50_ms"], result[f"top{depth}_baseline_p50_ms"]
        print(
            f"top_k {depth:3}: hybrid search p50 {full:.1f} ms / (embed + one dense search) "
            f"p50 {base:.1f} ms = {full / base:.2f}  (target <= 1.5)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("datasets", type=Path, nargs="+")
    parser.add_argument("--max-queries", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the raw results")
    args = parser.parse_args()
    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} cores")
    results = []
    for folder in args.datasets:
        result = asyncio.run(run(folder, args.max_queries))
        summarize(result)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
