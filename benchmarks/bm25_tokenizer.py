"""BM25 quality and cost of the BM25 tokenizer, against the tokenizer of an earlier revision.

Core's BM25 runs on tokens made here (``eagle_rag/index/sparse.py``: each token a hash word that
Milvus's BM25 function scores). A change to the tokenizer changes every sparse and hybrid
ranking, so it is measured on whole BEIR datasets, both tokenizers in one run: the baseline's
``sparse.py`` is read from git (``--baseline REV``) and loaded beside the current one. Ranking is
plain BM25 (k1 1.2, b 0.75: Milvus's defaults) over one passage per document, in memory, so the
figures isolate the tokenizer from Milvus, chunking and fusion. Printed per dataset: nDCG@10
and Recall@100 of each tokenizer and their ratio, and the tokenizer's throughput (documents
tokenized per second, one core) as a ratio too.

    .venv/bin/python -m benchmarks.bm25_tokenizer --baseline 43dbc87 \\
        ../shared/datasets/pubmedqa-dev ../shared/datasets/cmrc2018-trial
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from eagle_rag.evaluation.beir import Dataset, load_dataset
from eagle_rag.evaluation.metrics import ndcg_at, recall_at
from eagle_rag.index import sparse

K1, B = 1.2, 0.75
Encode = Callable[..., str]


def _baseline_module(revision: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{revision}:eagle_rag/index/sparse.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "sparse_baseline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("sparse_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Bm25:
    """An in-memory BM25 index over whitespace-separated hash words."""

    def __init__(self, ids: Sequence[str], documents: Sequence[list[str]]) -> None:
        self.ids = list(ids)
        self.lengths = [len(words) for words in documents]
        self.average = sum(self.lengths) / max(len(self.lengths), 1)
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for index, words in enumerate(documents):
            for word, count in Counter(words).items():
                self.postings.setdefault(word, []).append((index, count))

    def search(self, words: Sequence[str], k: int) -> list[str]:
        scores: dict[int, float] = {}
        total = len(self.ids)
        for word in words:
            postings = self.postings.get(word, [])
            if not postings:
                continue
            idf = math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
            for index, count in postings:
                norm = count + K1 * (1 - B + B * self.lengths[index] / self.average)
                scores[index] = scores.get(index, 0.0) + idf * count * (K1 + 1) / norm
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [self.ids[index] for index, _ in best]


def _quality(dataset: Dataset, encode: Encode) -> tuple[float, float]:
    """nDCG@10 and Recall@100 of plain BM25 over ``encode``'s hash words."""
    documents = [encode(doc.body).split() for doc in dataset.corpus]
    index = Bm25([doc.id for doc in dataset.corpus], documents)
    ndcg = recall = 0.0
    for query_id, text in dataset.queries.items():
        ranked = index.search(encode(text, query=True).split(), 100)
        ndcg += ndcg_at(ranked, dataset.qrels[query_id], 10)
        recall += recall_at(ranked, dataset.qrels[query_id], 100)
    count = max(len(dataset.queries), 1)
    return ndcg / count, recall / count


def _rates(dataset: Dataset, modules: Sequence[ModuleType], rounds: int = 3) -> list[float]:
    """Documents tokenized per second by each module, best of alternating rounds, each from
    cold caches (the token caches would otherwise favour whichever ran second)."""
    best = [0.0] * len(modules)
    for _ in range(rounds):
        for position, module in enumerate(modules):
            module.encode_token.cache_clear()
            module._stem.cache_clear()
            started = time.perf_counter()
            for doc in dataset.corpus:
                module.encode_for_bm25(doc.body)
            best[position] = max(
                best[position], len(dataset.corpus) / (time.perf_counter() - started)
            )
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--baseline", required=True, help="git revision of the baseline tokenizer")
    args = parser.parse_args(argv)
    baseline = _baseline_module(args.baseline)
    print(f"BM25 tokenizer: current vs {args.baseline} (in-memory BM25, k1 {K1}, b {B})")
    print(
        f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    for folder in args.datasets:
        dataset = load_dataset(folder)
        old = _quality(dataset, baseline.encode_for_bm25)
        new = _quality(dataset, sparse.encode_for_bm25)
        rates = _rates(dataset, (baseline, sparse))
        print(
            f"{dataset.name}: {len(dataset.corpus)} docs, {len(dataset.queries)} queries | "
            f"nDCG@10 {old[0]:.4f} -> {new[0]:.4f} ({new[0] / old[0]:.3f} x) | "
            f"R@100 {old[1]:.4f} -> {new[1]:.4f} ({new[1] / old[1]:.3f} x) | "
            f"docs/s {rates[0]:.0f} -> {rates[1]:.0f} ({rates[1] / rates[0]:.2f} x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
