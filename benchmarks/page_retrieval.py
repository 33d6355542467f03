"""Page retrieval inside one document on longdocs-dev: the project vs a text-layer page baseline.

For each question (its document named in ``metadata.doc``; qrels ids ``<pdf stem>#p<page>``),
in one run:

- project: every PDF ingested through the real pipeline (text layer, OCR for image-only pages,
  headings, chunks with page-true pages and boxes, visual chunks); the question searched inside
  its document and the pages ranked by ``best_pages`` — the code behind
  ``POST /documents/{id}/pages/search`` (text passages and visual hits vote).
- project, text votes only: the same search, pages ranked by its text passages alone (how
  pages were ranked before visual hits voted), to show what the visuals add in the same run.
- baseline: each page's text layer (pypdfium2) as one unit; BM25 (k1 1.2, b 0.75) and the same
  dense model (the app's text encoder) over the document's pages, fused by RRF (k 60).

Printed: page nDCG@10 and R@5, overall and by evidence kind (a question counts under each kind
it lists), with the project / baseline ratio; documents that failed to ingest. Bars (issue 16):
overall nDCG@10 and R@5 >= the baseline's; R@5 on Figure / Chart / Table >= baseline + 0.10.

    .venv/bin/python -m benchmarks.page_retrieval ../shared/datasets/longdocs-dev
    .venv/bin/python -m benchmarks.page_retrieval ../shared/datasets/longdocs-dev --max-pages 50

``--store DIR`` keeps the ingest (and the baseline's page vectors) and reuses them on the next
run with the same documents, so a ranking change is measured without ingesting again.
``--combine A.json B.json`` scores the union of runs over disjoint document sets (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import json
import math
import os
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pypdfium2 as pdfium

from eagle_rag.bootstrap import bootstrap
from eagle_rag.evaluation.metrics import ndcg_at, recall_at
from eagle_rag.retrieval.pages import best_pages, rank_pages
from eagle_rag.retrieval.visual import is_visual_collection
from eagle_rag.settings import load_settings

KB = "longdocs"
RRF_K = 60
K1, B = 1.2, 0.75
KINDS = ("Pure-text", "Table", "Chart", "Figure", "Layout")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    text: str
    doc: str
    kinds: tuple[str, ...]
    relevant: dict[str, int]


def load_questions(root: Path) -> list[Question]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (root / "qrels" / "test.tsv").read_text("utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[2].strip().isdigit():
            qrels[parts[0]][parts[1]] = int(parts[2])
    out = []
    for line in (root / "queries.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        meta = row.get("metadata") or {}
        kinds = tuple(_kind(k) for k in meta.get("evidence_sources") or ())
        if row["_id"] in qrels:
            out.append(Question(row["_id"], row["text"], meta["doc"], kinds, qrels[row["_id"]]))
    return out


def _kind(source: str) -> str:
    """ "Pure-text (Plain-text)" → "Pure-text", "Generalized-text (Layout)" → "Layout"."""
    if "Layout" in source:
        return "Layout"
    return source.split(" (")[0]


def page_texts(path: Path) -> list[str]:
    document = pdfium.PdfDocument(str(path))
    try:
        texts = []
        for index in range(len(document)):
            page = document[index]
            texts.append(page.get_textpage().get_text_range())
            page.close()
        return texts
    finally:
        document.close()


def bm25_ranking(pages: Sequence[str], query: str) -> list[int]:
    docs = [Counter(_WORD.findall(text.casefold())) for text in pages]
    lengths = np.array([sum(d.values()) for d in docs], dtype=float)
    average = lengths.mean() if len(docs) and lengths.mean() > 0 else 1.0
    scores = np.zeros(len(docs))
    for term in set(_WORD.findall(query.casefold())):
        holding = sum(1 for d in docs if term in d)
        if not holding:
            continue
        idf = math.log(1 + (len(docs) - holding + 0.5) / (holding + 0.5))
        tf = np.array([d.get(term, 0) for d in docs], dtype=float)
        scores += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths / average))
    return sorted(range(len(docs)), key=lambda i: (-scores[i], i))


def rrf(rankings: Sequence[Sequence[int]], depth: int) -> list[int]:
    fused: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for position, item in enumerate(ranking, start=1):
            fused[item] += 1.0 / (RRF_K + position)
    return sorted(fused, key=lambda i: (-fused[i], i))[:depth]


class Baseline:
    """BM25 + dense over each page's text layer, RRF; page vectors embedded once per document."""

    def __init__(self, encoder: Any, root: Path, cache: Path | None = None) -> None:
        self._encoder, self._root, self._cache = encoder, root, cache
        self._pages: dict[str, list[str]] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def rank(self, doc: str, query: str, depth: int = 10) -> list[str]:
        if doc not in self._pages:
            self._pages[doc] = page_texts(self._root / "pdf" / f"{doc}.pdf")
            self._vectors[doc] = self._page_vectors(doc)
        pages = self._pages[doc]
        query_vector = self._encoder.embed_queries([query])[0]
        similarity = self._vectors[doc] @ query_vector
        dense = sorted(range(len(pages)), key=lambda i: (-similarity[i], i))
        fused = rrf([bm25_ranking(pages, query), dense], depth)
        return [f"{doc}#p{i + 1}" for i in fused]

    def _page_vectors(self, doc: str) -> np.ndarray:
        """The pages' vectors, kept beside a ``--store`` ingest (same model, same pages)."""
        saved = self._cache / f"baseline-{doc}.npy" if self._cache else None
        if saved is not None and saved.exists():
            return np.asarray(np.load(saved))
        vectors = np.asarray(self._encoder.embed_passages(self._pages[doc]))
        if saved is not None:
            np.save(saved, vectors)
        return vectors


async def ingest(app: Any, root: Path, docs: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Each PDF through the real pipeline; returns stem → document id and the failed stems."""
    app.repositories.knowledge_bases.create(KB, description="longdocs-dev page retrieval")
    ids = {}
    for doc in docs:
        data = (root / "pdf" / f"{doc}.pdf").read_bytes()
        submission = await asyncio.to_thread(
            app.ingest.submit_file,
            kb_name=KB,
            filename=f"{doc}.pdf",
            stream=io.BytesIO(data),
            content_type=None,
            metadata={"corpus_id": doc},
        )
        ids[doc] = submission.document_id
    documents = app.repositories.documents
    while True:  # in-process workers and Celery alike
        settled = sum(documents.count(kb_name=KB, status=s) for s in ("completed", "failed"))
        if settled >= len(ids):
            break
        await asyncio.sleep(1.0)
    await app.flush_vectors()
    failed = [d for d, i in ids.items() if documents.get(i).status == "failed"]
    return ids, failed


async def ingest_once(app: Any, root: Path, docs: Sequence[str], marker: Path) -> dict[str, Any]:
    """Ingest, and record it in ``marker`` (a kept ``--store``); a marker for the same documents
    skips the ingest, so ranking changes are measured again without ingesting again."""
    if await asyncio.to_thread(marker.exists):
        done: dict[str, Any] = json.loads(await asyncio.to_thread(marker.read_text, "utf-8"))
        if sorted(done["ids"]) != sorted(docs):
            raise SystemExit(f"{marker} records other documents: use a fresh --store")
        return done
    started = time.perf_counter()
    ids, failed = await ingest(app, root, docs)
    done = {"ids": ids, "failed": failed, "ingest_s": time.perf_counter() - started}
    await asyncio.to_thread(marker.write_text, json.dumps(done), "utf-8")
    return done


async def run(
    root: Path, questions: list[Question], docs: list[str], store: Path | None = None
) -> dict[str, Any]:
    runs: dict[str, dict[str, list[str]]] = {"project": {}, "text_votes": {}, "baseline": {}}
    hits: dict[str, list[Any]] = {}  # each question's passages (collection, type, pages), --out
    with tempfile.TemporaryDirectory(prefix="eagle-pages-") as scratch:
        data = Path(store or scratch)
        await asyncio.to_thread(data.mkdir, parents=True, exist_ok=True)
        app = await bootstrap(load_settings({**os.environ, "EAGLE_DATA_DIR": str(data)}))
        try:
            done = await ingest_once(app, root, docs, data / "ingested.json")
            ids, failed, ingest_s = done["ids"], done["failed"], done["ingest_s"]
            baseline = Baseline(app.text_encoder, root, store)
            for q in questions:
                pages, pack = await best_pages(
                    app.retrieval, query=q.text, document_id=ids[q.doc], kb_name=KB, pages=10
                )
                runs["project"][q.id] = [f"{q.doc}#p{p.page}" for p in pages]
                text = [p for p in pack.passages if not is_visual_collection(p.collection)]
                text_pages = rank_pages(text, limit=10)
                runs["text_votes"][q.id] = [f"{q.doc}#p{p.page}" for p in text_pages]
                hits[q.id] = [[p.collection, p.type, list(p.page_nums)] for p in pack.passages]
                runs["baseline"][q.id] = await asyncio.to_thread(baseline.rank, q.doc, q.text)
        finally:
            await app.stop()
    return {"runs": runs, "hits": hits, "failed": failed, "ingest_seconds": round(ingest_s, 1)}


def scores(questions: Sequence[Question], ranked: dict[str, list[str]]) -> dict[str, Any]:
    groups: dict[str, list[Question]] = {"overall": list(questions)}
    for kind in KINDS:
        groups[kind] = [q for q in questions if kind in q.kinds]
    out = {}
    for name, members in groups.items():
        if members:
            out[name] = {
                "n": len(members),
                "ndcg@10": float(np.mean([ndcg_at(ranked[q.id], q.relevant, 10) for q in members])),
                "recall@5": float(
                    np.mean([recall_at(ranked[q.id], q.relevant, 5) for q in members])
                ),
            }
    return out


def summary(result: dict[str, Any]) -> str:
    lines = [
        f"longdocs-dev: {result['documents']} documents ({result['pages']} pages), "
        f"{result['questions']} questions, {len(result['failed'])} failed to ingest "
        f"{result['failed']}, ingest {result['ingest_seconds']} s",
    ]
    baseline = result["scores"]["baseline"]
    for run, title in (("project", "project"), ("text_votes", "project, text votes only")):
        lines += [f"-- {title} vs baseline", *_table(result["scores"][run], baseline)]
    return "\n".join(lines)


def _table(project: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    lines = [
        f"{'evidence':10} {'n':>4}  {'nDCG@10 proj':>12} {'base':>6} {'ratio':>6}  "
        f"{'R@5 proj':>8} {'base':>6} {'diff':>6}"
    ]
    for name, ours in project.items():
        theirs = baseline[name]
        ratio = ours["ndcg@10"] / theirs["ndcg@10"] if theirs["ndcg@10"] else float("nan")
        lines.append(
            f"{name:10} {ours['n']:>4}  {ours['ndcg@10']:>12.4f} {theirs['ndcg@10']:>6.4f} "
            f"{ratio:>6.3f}  {ours['recall@5']:>8.4f} {theirs['recall@5']:>6.4f} "
            f"{ours['recall@5'] - theirs['recall@5']:>+6.3f}"
        )
    return lines


def combined(questions: Sequence[Question], parts: Sequence[Path]) -> dict[str, Any]:
    """One result from runs over disjoint sets of documents (each part's ``--out`` file), so the
    29 documents can be ingested in parts on a small machine and scored as one set."""
    loaded = [json.loads(part.read_text("utf-8")) for part in parts]
    runs: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for part in loaded:
        for name, ranked in part["runs"].items():
            runs[name].update(ranked)
    asked = [q for q in questions if q.id in runs["project"]]
    return {
        "documents": sum(p["documents"] for p in loaded),
        "pages": sum(p["pages"] for p in loaded),
        "questions": len(asked),
        "failed": [doc for p in loaded for doc in p["failed"]],
        "ingest_seconds": round(sum(p["ingest_seconds"] for p in loaded), 1),
        "scores": {name: scores(asked, ranked) for name, ranked in runs.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--docs", default="", help="comma-separated PDF stems (default: all)")
    parser.add_argument("--max-pages", type=int, default=0, help="only documents this short")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--store", type=Path, default=None, help="keep/reuse the ingest here")
    parser.add_argument(
        "--combine",
        type=Path,
        nargs="+",
        default=None,
        help="score the union of earlier runs' --out files (the set run in parts)",
    )
    args = parser.parse_args()
    questions = load_questions(args.root)
    if args.combine:
        print(summary(combined(questions, args.combine)), flush=True)
        return
    counts = {p.stem: len(pdfium.PdfDocument(str(p))) for p in (args.root / "pdf").glob("*.pdf")}
    docs = sorted({q.doc for q in questions} & set(counts))
    if args.docs:
        docs = [d for d in docs if d in set(args.docs.split(","))]
    if args.max_pages:
        docs = [d for d in docs if counts[d] <= args.max_pages]
    questions = [q for q in questions if q.doc in docs]
    result = asyncio.run(run(args.root, questions, docs, args.store))
    runs, hits = result.pop("runs"), result.pop("hits")
    result.update(
        date=datetime.date.today().isoformat(),
        documents=len(docs),
        pages=sum(counts[d] for d in docs),
        questions=len(questions),
        scores={name: scores(questions, ranked) for name, ranked in runs.items()},
    )
    print(summary(result), flush=True)
    if args.out:
        args.out.write_text(json.dumps({**result, "runs": runs, "hits": hits}, indent=2))


if __name__ == "__main__":
    main()
