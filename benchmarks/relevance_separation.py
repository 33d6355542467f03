"""Does the relevance score mean the same across queries? Answerable vs unanswerable queries.

For a BEIR dataset: split the judged queries in two halves (by a hash of the id); ingest the
corpus *without* the relevant documents of the second half, so its queries have no answer in the
KB. Then for every query take the top hit of a hybrid search and ask how well one threshold on
its score tells the two halves apart: the ROC AUC (1 = a threshold separates them perfectly,
0.5 = chance) and the best single-threshold accuracy, for

- ``relevance`` (the source ``score``, docs/retrieval.md#relevance-score),
- the raw dense cosine of the top hit,
- ``plan_fused`` (the fusion scale: 1 or 2 for every query's best hit).

    .venv/bin/python -m benchmarks.relevance_separation ../shared/datasets/pubmedqa-dev
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eagle_rag.bootstrap import bootstrap
from eagle_rag.evaluation.beir import Dataset, load_dataset
from eagle_rag.evaluation.runner import Evaluator
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.retrieval.wire import search_response
from eagle_rag.settings import load_settings


def split(dataset: Dataset, per_half: int) -> tuple[Dataset, list[str], list[str]]:
    """(the dataset to ingest, answerable query ids, unanswerable query ids)."""
    ids = sorted(dataset.queries, key=lambda q: hashlib.sha1(q.encode()).hexdigest())
    answerable, unanswerable = ids[0::2][:per_half], ids[1::2][:per_half]
    kept = {d for q in answerable for d, g in dataset.qrels[q].items() if g > 0}
    removed = {d for q in unanswerable for d, g in dataset.qrels[q].items() if g > 0} - kept
    corpus = tuple(doc for doc in dataset.corpus if doc.id not in removed)
    reduced = dataclasses.replace(
        dataset,
        corpus=corpus,
        queries={q: dataset.queries[q] for q in answerable},
        qrels={q: dataset.qrels[q] for q in answerable},
    )
    return reduced, answerable, unanswerable


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties counting half (Mann-Whitney)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def best_accuracy(positives: Sequence[float], negatives: Sequence[float]) -> tuple[float, float]:
    """(accuracy, threshold) of the best single threshold ``score >= t``."""
    best = (0.0, 0.0)
    for threshold in sorted({*positives, *negatives}):
        right = sum(p >= threshold for p in positives) + sum(n < threshold for n in negatives)
        best = max(best, (right / (len(positives) + len(negatives)), threshold))
    return best


async def run(folder: Path, per_half: int) -> dict[str, Any]:
    dataset = load_dataset(folder)
    reduced, answerable, unanswerable = split(dataset, per_half)
    with tempfile.TemporaryDirectory(prefix="eagle-bench-") as data:
        app = await bootstrap(load_settings({**os.environ, "EAGLE_DATA_DIR": data}))
        try:
            await Evaluator(app, keep=True).run(reduced, modes=("hybrid",), max_queries=1)
            kb = next(k.name for k in app.repositories.knowledge_bases.list())
            tops: dict[str, dict[str, list[float]]] = {"answerable": {}, "unanswerable": {}}
            for half, ids in (("answerable", answerable), ("unanswerable", unanswerable)):
                for qid in ids:
                    pack = await app.retrieval.search(
                        QueryRequest(dataset.queries[qid], kb_names=(kb,), top_k=5)
                    )
                    top = search_response(pack)["sources"]["text"][0]
                    for name, value in (
                        ("relevance", top["score"]),
                        ("cosine", top["scores"].get("dense", 0.0)),
                        ("plan_fused", top["scores"].get("plan_fused", 0.0)),
                    ):
                        tops[half].setdefault(name, []).append(float(value))
        finally:
            await app.stop()
    result: dict[str, Any] = {
        "dataset": dataset.name,
        "documents": len(reduced.corpus),
        "queries": f"{len(answerable)} answerable + {len(unanswerable)} unanswerable",
    }
    for name in ("relevance", "cosine", "plan_fused"):
        yes, no = tops["answerable"][name], tops["unanswerable"][name]
        accuracy, threshold = best_accuracy(yes, no)
        result[name] = {
            "auc": round(auc(yes, no), 3),
            "best_accuracy": round(accuracy, 3),
            "at_threshold": round(threshold, 3),
            "median_answerable": round(sorted(yes)[len(yes) // 2], 3),
            "median_unanswerable": round(sorted(no)[len(no) // 2], 3),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--per-half", type=int, default=100)
    arguments = parser.parse_args()
    for folder in arguments.datasets:
        result = asyncio.run(run(folder, arguments.per_half))
        print(result["dataset"], result["documents"], "documents,", result["queries"])
        for name in ("relevance", "cosine", "plan_fused"):
            print(f"  {name:10}", result[name])


if __name__ == "__main__":
    main()
