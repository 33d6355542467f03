"""Run an evaluation: ingest a dataset into a throw-away KB through the real pipeline, then search
every judged query in each mode and score the runs.

Chunks map back to corpus ids through their document, and a document's rank is that of its
best chunk. Latency is the wall time of ``RetrievalService.search``; the baseline beside it is
one query embedding plus one dense Milvus search of the same depth, measured in the same run,
so the ratio shows what orchestration (BM25, fusion, expansion, catalog look-ups) adds.
"""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.evaluation.beir import Dataset
from eagle_rag.evaluation.hook_timings import HookCallTimes, PhaseTimings
from eagle_rag.evaluation.metrics import percentile, score_run
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.ingest.deletion import remove_knowledge_base
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.payloads import QueryRequest, RetrievalMode

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

MODES: tuple[str, ...] = ("dense", "sparse", "hybrid", "hybrid+rerank")
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class ModeReport:
    mode: str
    metrics: dict[str, float]
    p50_ms: float
    p95_ms: float


@dataclass(slots=True)
class EvalReport:
    dataset: str
    documents: int
    chunks: int
    queries: int
    ingest_seconds: float
    encoder: str
    reranker: str | None
    hybrid_fusion: str = "normalized"  # how each plan's dense and BM25 lists were fused
    baseline_p50_ms: float = 0.0
    baseline_p95_ms: float = 0.0
    modes: list[ModeReport] = field(default_factory=list)
    failed_documents: int = 0
    blank_queries: int = 0
    # Phase ("ingest", then each mode) → "HOOK plugin" → calls, total_ms, mean_ms.
    hook_ms: dict[str, PhaseTimings] = field(default_factory=dict)

    @property
    def ingest_docs_per_s(self) -> float:
        return self.documents / self.ingest_seconds if self.ingest_seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ingest_docs_per_s"] = round(self.ingest_docs_per_s, 2)
        return data


def reranker_name(app: EagleApp) -> str | None:
    """What ``hybrid+rerank`` reranks with: the RERANK_MERGED subscribers of the app's namespace
    (they answer first; biomed's reranks every entity query), then Core's configured reranker.
    None when there is neither, and then the mode is skipped."""
    ctx = HookContext(plugin_namespace=app.namespace)
    subscribers = app.bus.subscribers(hooks.rerank_merged)
    names = [f"{s.plugin} (RERANK_MERGED)" for s in subscribers if s.applies_to(ctx)]
    if app.retrieval.reranker is not None:
        names.append(app.retrieval.reranker.name)
    return ", then ".join(names) or None


class Evaluator:
    """Evaluates one dataset on one running app (embedded); the KB is removed afterwards."""

    def __init__(
        self,
        app: EagleApp,
        *,
        top_k: int = 100,
        keep: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self._app = app
        self._top_k = top_k
        self._keep = keep
        self._progress = progress or (lambda phase, done, total: None)

    async def run(
        self,
        dataset: Dataset,
        *,
        modes: Sequence[str] = MODES,
        max_queries: int | None = None,
    ) -> EvalReport:
        if max_queries is not None and max_queries < 1:  # [:0] is none, [:-1] all but one
            raise InvalidInputError(f"max_queries must be at least 1, not {max_queries}")
        app = self._app
        kb = f"eval-{uuid.uuid4().hex[:10]}"
        app.repositories.knowledge_bases.create(kb, description=f"eagle-rag eval {dataset.name}")
        times = HookCallTimes()
        app.bus.observe(times.record)
        try:
            owners, seconds, failed = await self._ingest(kb, dataset)
            ingest_hooks = times.take()
            report = EvalReport(
                dataset=dataset.name,
                documents=len(dataset.corpus),
                chunks=await self._chunks(kb),
                queries=0,
                ingest_seconds=round(seconds, 2),
                encoder=app.text_encoder.name,
                reranker=reranker_name(app),
                hybrid_fusion=app.settings.retrieval.hybrid_fusion,
                failed_documents=failed,
                blank_queries=dataset.blank_queries,
                hook_ms={"ingest": ingest_hooks},
            )
            queries = list(dataset.queries.items())[:max_queries]
            report.queries = len(queries)
            qrels = {qid: dataset.qrels[qid] for qid, _ in queries}
            baseline = await self._baseline(kb, [text for _, text in queries])
            times.take()  # the baseline calls no hook; drop anything in flight meanwhile
            report.baseline_p50_ms = round(percentile(baseline, 50), 2)
            report.baseline_p95_ms = round(percentile(baseline, 95), 2)
            for mode in modes:
                if mode == "hybrid+rerank" and report.reranker is None:
                    continue  # nothing reranks: the mode would repeat hybrid
                report.modes.append(await self._mode(kb, mode, queries, qrels, owners))
                report.hook_ms[mode] = times.take()
            return report
        finally:
            app.bus.observe(None)
            if not self._keep:
                await asyncio.to_thread(remove_knowledge_base, app, kb)

    async def _chunks(self, kb: str) -> int:
        """Text chunks of the KB in every text collection: a plugin's specialized ones too,
        but not its views, whose rows are copies of chunks counted in their base."""
        app = self._app
        views = app.plugins.collection_views()
        specialized = [
            c
            for p in app.plugins.loaded
            for c in p.manifest.provides_specialized_collections
            if c not in views
        ]
        texts = [TEXT_COLLECTION, *(c for c in specialized if app.vectors.spec(c).kind == "text")]
        where = eq("kb_name", kb)
        counts = [asyncio.to_thread(app.vectors.count, c, where) for c in texts]
        return sum(await asyncio.gather(*counts))

    async def _ingest(self, kb: str, dataset: Dataset) -> tuple[dict[str, list[str]], float, int]:
        """Submit every corpus document and wait; returns document id → corpus ids."""
        app = self._app
        owners: dict[str, list[str]] = {}
        total = len(dataset.corpus)

        def submit_all() -> None:
            for done, doc in enumerate(dataset.corpus, start=1):
                if doc.path is not None:  # a file corpus: the file as a user would upload it
                    filename, data, declared = doc.path.name, doc.path.read_bytes(), None
                else:
                    filename, data = f"{doc.id}.txt", doc.body.encode("utf-8")
                    declared = "text/plain"
                submission = app.ingest.submit_file(
                    kb_name=kb,
                    filename=filename,
                    stream=io.BytesIO(data),
                    content_type=declared,
                    metadata={"corpus_id": doc.id},
                )
                # Identical texts dedupe to one document, which then answers for both ids.
                owners.setdefault(submission.document_id, []).append(doc.id)
                if done % 100 == 0:
                    self._progress("submit", done, total)

        started = time.perf_counter()
        await asyncio.to_thread(submit_all)
        documents = app.repositories.documents
        while True:  # works for in-process workers and for Celery alike
            settled = sum(documents.count(kb_name=kb, status=s) for s in ("completed", "failed"))
            self._progress("ingest", settled, len(owners))
            if settled >= len(owners):
                break
            await asyncio.sleep(0.5)
        await app.flush_vectors()
        seconds = time.perf_counter() - started
        failed = app.repositories.documents.count(kb_name=kb, status="failed")
        return owners, seconds, failed

    async def _baseline(self, kb: str, texts: Sequence[str]) -> list[float]:
        """One query embedding + one dense search of the same depth, per query, in ms."""
        app = self._app
        where = eq("kb_name", kb)
        timings = []
        for text in texts:
            started = time.perf_counter()
            vector = await asyncio.to_thread(app.text_encoder.embed_queries, [text])
            await asyncio.to_thread(
                app.vectors.search_dense,
                TEXT_COLLECTION,
                vector.tolist(),
                top_k=self._top_k,
                where=where,
            )
            timings.append((time.perf_counter() - started) * 1000)
        return timings

    async def _mode(
        self,
        kb: str,
        mode: str,
        queries: Sequence[tuple[str, str]],
        qrels: dict[str, Any],
        owners: dict[str, list[str]],
    ) -> ModeReport:
        retrieval_mode: RetrievalMode = "hybrid" if mode.startswith("hybrid") else mode  # type: ignore[assignment]
        runs: dict[str, list[str]] = {}
        timings: list[float] = []
        for done, (qid, text) in enumerate(queries, start=1):
            request = QueryRequest(
                text,
                kb_names=(kb,),
                top_k=self._top_k,
                mode=retrieval_mode,
                rerank=mode == "hybrid+rerank",
            )
            started = time.perf_counter()
            pack = await self._app.retrieval.search(request)
            timings.append((time.perf_counter() - started) * 1000)
            ranked: dict[str, None] = {}
            for passage in pack.passages:
                for corpus_id in owners.get(passage.document_id, ()):
                    ranked.setdefault(corpus_id, None)
            runs[qid] = list(ranked)
            if done % 50 == 0:
                self._progress(mode, done, len(queries))
        return ModeReport(
            mode,
            {k: round(v, 4) for k, v in score_run(runs, qrels).items()},
            round(percentile(timings, 50), 2),
            round(percentile(timings, 95), 2),
        )
