"""RetrieverOrchestrator: one CollectionQueryPlan → one ranked list.

Per plan: QUERY_DENSE_EXPAND (what it added and its hints, the why, are the plan's ``expand``
step), then dense ANN and BM25 sparse search (the sparse search runs while the query is being
embedded), fused inside the plan (by rescaled scores, or by RRF when configured), then the
plan's RERANK hook.
A failing half (say the embedder) leaves the other half's list with a warning; a plan whose
every search fails is reported and contributes nothing, and keeps its failures so the service
can tell an outage (every plan failed because a backend is down: a 503) from a partial one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.errors import EagleError, describe
from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.index.filters import Filter, all_of, in_, json_eq
from eagle_rag.index.sparse import content_tokens
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import (
    CollectionQueryPlan,
    EmbedRequest,
    QueryExpansion,
    QueryRequest,
    RetrievedHit,
    VisualFilter,
)
from eagle_rag.retrieval.background import DenseBackground
from eagle_rag.retrieval.filters import TEXT_ROWS, VISUAL_ROWS, RowFields, build_metadata_filter
from eagle_rag.retrieval.fusion import RankedList, normalized_fuse, rrf_fuse
from eagle_rag.retrieval.hits import to_hit
from eagle_rag.retrieval.pack import Step, StepLog
from eagle_rag.retrieval.query_vectors import QueryVectors
from eagle_rag.settings import HybridFusion
from eagle_rag.tracing import annotate, traced

# BM25 scores a passage that shares no word with the query 0: the scale's true zero.
BM25_NO_MATCH = 0.0
# A hint shown in a step's detail is cut here (a step is read by a person, not parsed).
MAX_HINT_CHARS = 200


@dataclass(slots=True)
class PlanResult:
    """A plan's fused hits, the query vector it used (for drill-down), and its steps."""

    plan: CollectionQueryPlan
    hits: tuple[RetrievedHit, ...] = ()
    vector: list[float] | None = None
    sparse_text: str = ""
    where: Filter = field(default_factory=lambda: Filter(""))
    steps: list[Step] = field(default_factory=list)
    failed: bool = False
    # Why each failed search of the plan failed (kept whole: the outage check reads causes).
    failures: list[Exception] = field(default_factory=list)
    shared: QueryVectors | None = None  # the search's query vectors, shared by its plans


def expansion_detail(expansion: QueryExpansion, *, max_chars: int = MAX_HINT_CHARS) -> str:
    """A QUERY_DENSE_EXPAND result as a step's detail: what it changed, then its hints (why)."""
    parts = []
    if expansion.dense_text:
        parts.append("dense query rewritten")
    if expansion.sparse_terms:
        parts.append(f"{len(expansion.sparse_terms)} BM25 terms added")
    for key, value in expansion.hints.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        if len(shown) > max_chars:
            shown = shown[:max_chars] + "…"
        parts.append(f"{key}: {shown or '-'}")
    return "; ".join(parts) or "no change"


class RetrieverOrchestrator:
    """Runs plans against the namespace's vector store through the hook bus."""

    def __init__(
        self,
        bus: HookBus,
        vectors: Any,
        *,
        fusion: HybridFusion,
        rrf_k: int,
        head: int,
        background: DenseBackground | None = None,
    ) -> None:
        self._bus = bus
        self._vectors = vectors
        self._fusion = fusion
        self._rrf_k = rrf_k
        self._head = head
        self._background = background
        self.tracing = bus.tracing

    @traced("recall")
    async def run(
        self,
        request: QueryRequest,
        plan: CollectionQueryPlan,
        where: Filter,
        ctx: HookContext,
        *,
        depth: int,
        shared: QueryVectors | None = None,
    ) -> PlanResult:
        """``depth`` is how many hits each of the plan's searches returns (at least top_k)."""
        annotate(collection=plan.collection, encoder=plan.encoder or None, mode=request.mode)
        log = StepLog()
        result = PlanResult(plan, shared=shared)
        started = log.now()
        expansion = await self._bus.invoke_first(
            hooks.query_dense_expand, ctx=ctx, query=request, plan=plan
        )
        if expansion is not None:  # say what was added and why (the subscriber's hints)
            log.add(f"{plan.collection}:expand", "ok", expansion_detail(expansion), since=started)
        dense_text = (expansion.dense_text if expansion else None) or request.text
        sparse_terms = expansion.sparse_terms if expansion else ()
        # Once each: a plugin may name a term both as a QUERY_ASSEMBLE expansion and as a
        # QUERY_DENSE_EXPAND sparse term (lakehouse-bi's glossary translations are both).
        added = dict.fromkeys((*plan.sparse_terms, *sparse_terms))
        result.sparse_text = " ".join((request.text, *added))
        rows = VISUAL_ROWS if plan.collection == VISUAL_COLLECTION else TEXT_ROWS
        result.where = all_of(where, await self._plan_filter(request, plan, rows, ctx))
        lists = await self._search(
            request, plan, dense_text, max(plan.top_k, depth), ctx, result, log
        )
        if not lists:
            detail = "plan skipped: every search of the plan failed"
            log.add(f"{plan.collection}:plan", "error", detail)
            result.failed = True
        else:
            result.hits = await self._fuse_and_rerank(request, plan, lists, ctx, log)
        result.steps = log.items
        return result

    async def _search(
        self,
        request: QueryRequest,
        plan: CollectionQueryPlan,
        dense_text: str,
        depth: int,
        ctx: HookContext,
        result: PlanResult,
        log: StepLog,
    ) -> list[RankedList]:
        """Dense and BM25 side by side (BM25 runs while the query embeds); a failing half
        leaves the other half's list with a warning. Sets the query vector on ``result``."""
        label = plan.collection
        want_dense = request.mode in ("dense", "hybrid") and bool(plan.encoder)
        want_sparse = request.mode == "sparse" or (request.mode == "hybrid" and plan.hybrid)
        if not plan.encoder and request.mode != "sparse":
            want_sparse = True
            log.add(f"{label}:dense", "skipped", "the plan has no query encoder: BM25 only")
        dense_task = sparse_task = None
        if want_dense:
            dense_task = asyncio.create_task(
                self._dense(plan, dense_text, depth, result.where, ctx, result.shared)
            )
        if want_sparse:
            sparse_task = asyncio.create_task(
                self._sparse(plan, result.sparse_text, depth, result.where)
            )
        lists: list[RankedList] = []
        if dense_task is not None:
            try:
                result.vector, found, ms = await dense_task
            except Exception as exc:  # one failing half must not cost the other half
                result.failures.append(exc)
                log.add(f"{label}:dense", "warning", f"dense search failed: {describe(exc)}")
            else:
                level = await self._short_list_background(plan, result.vector, found, ctx)
                lists.append(RankedList("dense", found, background=level))
                log.add(f"{label}:dense", "ok", f"{len(found)} hits", ms=ms)
        if sparse_task is not None:
            try:
                found, ms = await sparse_task
            except Exception as exc:
                result.failures.append(exc)
                log.add(f"{label}:sparse", "warning", f"sparse search failed: {describe(exc)}")
            else:
                # BM25 on function words alone orders, but its best hit is no evidence.
                telling = bool(content_tokens(result.sparse_text))
                lists.append(
                    RankedList("sparse", found, zero=BM25_NO_MATCH, tells_relevance=telling)
                )
                log.add(f"{label}:sparse", "ok", f"{len(found)} hits", ms=ms)
        return lists

    async def _fuse_and_rerank(
        self,
        request: QueryRequest,
        plan: CollectionQueryPlan,
        lists: list[RankedList],
        ctx: HookContext,
        log: StepLog,
    ) -> tuple[RetrievedHit, ...]:
        """The plan's lists fused (rescaled scores, or RRF), then the plan's RERANK hook."""
        if self._fusion == "rrf":
            fused = rrf_fuse(lists, k=self._rrf_k, head=self._head, score_name="plan_fused")
        else:
            fused = normalized_fuse(lists, head=self._head, score_name="plan_fused")
        hits = tuple(fused)
        reranked = await self._bus.invoke_first(
            hooks.rerank, ctx=ctx, query=request, plan=plan, hits=hits
        )
        if reranked is not None:
            log.add(f"{plan.collection}:rerank", "ok", "a plugin reranked this plan")
            return tuple(reranked)
        return hits

    async def _short_list_background(
        self,
        plan: CollectionQueryPlan,
        vector: list[float],
        found: list[RetrievedHit],
        ctx: HookContext,
    ) -> float | None:
        """The background a dense list shorter than the head lacks (background.py)."""
        if self._background is None:
            return None
        encoder = self._background.passage_encoder(plan.collection)
        if encoder is None:
            return None

        async def embed(texts: Sequence[str]) -> Sequence[Sequence[float]]:
            request = EmbedRequest(tuple(texts), encoder, purpose="passage")
            batch = await self._bus.invoke_first(hooks.embed_text, ctx=ctx, request=request)
            if batch is None:
                raise EagleError(f"no subscriber embedded passages with {encoder!r}")
            return batch.vectors

        return await self._background.for_short_list(encoder, vector, len(found), self._head, embed)

    async def _dense(
        self,
        plan: CollectionQueryPlan,
        text: str,
        depth: int,
        where: Filter,
        ctx: HookContext,
        shared: QueryVectors | None = None,
    ) -> tuple[list[float], list[RetrievedHit], float]:
        """Embed the query (EMBED_TEXT) and search; returns vector, hits and milliseconds."""
        started = time.perf_counter()

        async def embed() -> list[float]:
            request = EmbedRequest((text,), plan.encoder, purpose="query")
            batch = await self._bus.invoke_first(hooks.embed_text, ctx=ctx, request=request)
            if batch is None or len(batch.vectors) != 1:
                raise EagleError(f"no subscriber embedded the query with {plan.encoder!r}")
            return [float(x) for x in batch.vectors[0]]

        vector = await (shared.get(plan.encoder, text, embed) if shared else embed())
        found = await asyncio.to_thread(
            self._vectors.search_dense, plan.collection, [vector], top_k=depth, where=where
        )
        hits = [to_hit(plan.collection, h, stage="dense") for h in found[0]]
        return vector, hits, (time.perf_counter() - started) * 1000

    async def _sparse(
        self, plan: CollectionQueryPlan, text: str, depth: int, where: Filter
    ) -> tuple[list[RetrievedHit], float]:
        started = time.perf_counter()
        found = await asyncio.to_thread(
            self._vectors.search_sparse, plan.collection, [text], top_k=depth, where=where
        )
        hits = [to_hit(plan.collection, h, stage="sparse") for h in found[0]]
        return hits, (time.perf_counter() - started) * 1000

    async def _plan_filter(
        self, request: QueryRequest, plan: CollectionQueryPlan, rows: RowFields, ctx: HookContext
    ) -> Filter | None:
        """The plan's own filters, and for visual plans the RETRIEVE_VISUAL_FILTER override."""
        own = build_metadata_filter(plan.filters, rows=rows) if plan.filters else None
        if plan.collection != VISUAL_COLLECTION:
            return own
        visual = await self._bus.invoke_first(
            hooks.retrieve_visual_filter, ctx=ctx, query=request, plan=plan
        )
        return all_of(own, _visual_filter(visual)) if visual else own


def _visual_filter(visual: VisualFilter) -> Filter:
    return all_of(
        in_("chunk_type", visual.chunk_types) if visual.chunk_types else None,
        in_("page", visual.pages) if visual.pages else None,
        *(json_eq("metadata", str(k), v) for k, v in visual.extra.items()),
    )
