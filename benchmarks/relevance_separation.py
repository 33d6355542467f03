"""Does the relevance score mean the same across queries? Answerable vs unanswerable queries.

For a BEIR dataset: split the judged queries in two halves (by a hash of the id); ingest the
corpus *without* the relevant documents of the second half, so its queries have no answer in the
KB. Then for every query take the top hit of a hybrid search and ask how well one threshold on
its score tells the two halves apart: the ROC AUC (1 = a threshold separates them perfectly,
0.5 = chance) and the best single-threshold accuracy, for

- ``relevance`` (the source ``score``, docs/retrieval.md#relevance-score),
- the raw dense cosine of the top hit,
- ``plan_fused`` (the fusion scale: 1 or 2 for every query's best hit).

With ``--one-document`` it asks the same of searches that have no background of their own: the
whole corpus is ingested, and each query searches one document only (a filter on its id, as a
KB of one document would): its relevant document, or a random other one. The relevance is
measured twice on the same store, with ``retrieval.short_list_background`` on and off (the
baseline: a short list measured against its own last hit).

    .venv/bin/python -m benchmarks.relevance_separation ../shared/datasets/pubmedqa-dev
    python -m benchmarks.relevance_separation --one-document ../shared/datasets/pubmedqa-dev
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import os
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eagle_rag.bootstrap import bootstrap
from eagle_rag.db.repositories.documents import MAX_PAGE
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
        result[name] = separation(yes, no, ("answerable", "unanswerable"))
    return result


def separation(
    yes: Sequence[float], no: Sequence[float], halves: tuple[str, str]
) -> dict[str, Any]:
    """How well one threshold tells ``yes`` from ``no``: AUC, best accuracy and its threshold,
    and each half's median (named ``median_<half>``)."""
    accuracy, threshold = best_accuracy(yes, no)
    return {
        "auc": round(auc(yes, no), 3),
        "best_accuracy": round(accuracy, 3),
        "at_threshold": round(threshold, 3),
        f"median_{halves[0]}": round(sorted(yes)[len(yes) // 2], 3),
        f"median_{halves[1]}": round(sorted(no)[len(no) // 2], 3),
    }


async def one_document(folder: Path, per_half: int) -> dict[str, Any]:
    """Relevance of a search restricted to one document: the relevant one vs a random one."""
    dataset = load_dataset(folder)
    ids = sorted(dataset.queries, key=lambda q: hashlib.sha1(q.encode()).hexdigest())
    picked = [q for q in ids if any(g > 0 for g in dataset.qrels[q].values())][: 2 * per_half]
    chooser = random.Random(7)
    corpus_ids = [doc.id for doc in dataset.corpus]
    in_corpus = set(corpus_ids)
    pairs: list[tuple[str, str, str]] = []  # (query, relevant corpus id, unrelated corpus id)
    for qid in picked:
        relevant = [d for d, g in dataset.qrels[qid].items() if g > 0 and d in in_corpus]
        if not relevant:  # judged against a passage the corpus does not hold
            continue
        other = chooser.choice(corpus_ids)
        while other in dataset.qrels[qid]:
            other = chooser.choice(corpus_ids)
        pairs.append((dataset.queries[qid], relevant[0], other))
    result: dict[str, Any] = {"dataset": dataset.name, "documents": len(dataset.corpus)}
    result["queries"] = f"{len(pairs)} queries, each on its relevant and on a random document"
    with tempfile.TemporaryDirectory(prefix="eagle-bench-") as data:
        for background in (False, True):
            environ = {
                **os.environ,
                "EAGLE_DATA_DIR": data,
                "EAGLE_RAG_RETRIEVAL__SHORT_LIST_BACKGROUND": str(background).lower(),
            }
            app = await bootstrap(load_settings(environ))
            try:
                if not background:
                    await Evaluator(app, keep=True).run(dataset, modes=("hybrid",), max_queries=1)
                yes, no = await _one_document_scores(app, pairs)
            finally:
                await app.stop()
            rule = "background" if background else "own last hit (baseline)"
            result[rule] = separation(yes, no, ("relevant", "unrelated"))
    return result


async def _one_document_scores(
    app: Any, pairs: Sequence[tuple[str, str, str]]
) -> tuple[list[float], list[float]]:
    """The top relevance of each query on its relevant document and on the unrelated one (0
    when the search finds nothing there)."""
    kb = next(k.name for k in app.repositories.knowledge_bases.list())
    owner: dict[str, str] = {}
    while page := app.repositories.documents.list(kb_name=kb, limit=MAX_PAGE, offset=len(owner)):
        owner.update((str(d.extra.get("corpus_id")), d.id) for d in page)
    tops: tuple[list[float], list[float]] = ([], [])
    for text, relevant, unrelated in pairs:
        for found, corpus_id in zip(tops, (relevant, unrelated), strict=True):
            request = QueryRequest(text, kb_names=(kb,), document_ids=(owner[corpus_id],), top_k=5)
            sources = search_response(await app.retrieval.search(request))["sources"]["text"]
            found.append(float(sources[0]["score"]) if sources else 0.0)
    return tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--per-half", type=int, default=100)
    parser.add_argument("--one-document", action="store_true", help=one_document.__doc__)
    arguments = parser.parse_args()
    for folder in arguments.datasets:
        if arguments.one_document:
            result = asyncio.run(one_document(folder, arguments.per_half))
            names: tuple[str, ...] = ("own last hit (baseline)", "background")
        else:
            result = asyncio.run(run(folder, arguments.per_half))
            names = ("relevance", "cosine", "plan_fused")
        print(result["dataset"], result["documents"], "documents,", result["queries"])
        for name in names:
            print(f"  {name:10}", result[name])


if __name__ == "__main__":
    main()
