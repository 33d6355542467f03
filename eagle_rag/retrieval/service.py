"""The query path end to end (DESIGN §6): one QueryRequest in, one ContextPack out.

QUERY_ASSEMBLE → CLASSIFY_QUERY → scope union → RetrieverOrchestrator per plan (concurrently)
→ RETRIEVE_SUPPLEMENT → RRF merge with dedupe → RRF_POST_MERGE → RERANK_MERGED or the configured
reranker → parent-document expansion → passages with citations, trimmed to a token budget.

Caller mistakes (an unknown KB, a bad filter) raise; partial failures never do: a failing plan,
hook or reranker is skipped or falls back, and the pack's ``steps`` say what happened. When
every plan and bridge failed because a backend is down, the search raises that outage
(``BackendUnavailableError`` naming the backends: a 503 with Retry-After at the edges).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from eagle_rag.engines.base import EngineQuery
from eagle_rag.engines.schema import validate_settings
from eagle_rag.errors import EagleError, InvalidInputError, describe
from eagle_rag.index.collections import BASE_COLLECTIONS
from eagle_rag.index.vector_store import MAX_TOP_K
from eagle_rag.models.rerankers import Reranker
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.payloads import (
    CollectionQueryPlan,
    QueryHints,
    QueryRequest,
    QueryRouteDecision,
    RetrievedHit,
)
from eagle_rag.retrieval.background import dense_background
from eagle_rag.retrieval.expansion import ParentExpander
from eagle_rag.retrieval.fusion import RankedList, rrf_fuse
from eagle_rag.retrieval.orchestrator import PlanResult, RetrieverOrchestrator
from eagle_rag.retrieval.outage import total_outage
from eagle_rag.retrieval.pack import ContextPack, Passage, StepLog, trim_to_budget
from eagle_rag.retrieval.query_vectors import QueryVectors
from eagle_rag.retrieval.scope import Scope, resolve_scope
from eagle_rag.retrieval.visual import prune_visual_plans, rank_visuals, split_results
from eagle_rag.tracing import traced

if TYPE_CHECKING:
    from eagle_rag.engines.service import KnowledgeBaseService
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4000
MAX_SCOPE_ITEMS = 100
MODES = ("dense", "sparse", "hybrid")
FILENAME_CACHE = 50_000


class RetrievalService:
    """Searches one namespace; built once per app and shared by every surface."""

    def __init__(
        self, app: Runtime, knowledge: KnowledgeBaseService, reranker: Reranker | None = None
    ) -> None:
        self._app = app
        self._knowledge = knowledge
        self._config = app.settings.retrieval
        self.reranker = reranker
        self.tracing = app.bus.tracing
        self._filename_cache: dict[str, str] = {}
        self._orchestrator = RetrieverOrchestrator(
            app.bus,
            app.vectors,
            fusion=self._config.hybrid_fusion,
            rrf_k=self._config.rrf_k,
            head=self._config.candidates,
            background=dense_background(self._config, app.encoders),
        )
        self._expander = ParentExpander(
            app.vectors,
            children=self._config.expand_children,
            search_depth=self._config.expand_search_depth,
        )

    @traced("search")
    async def search(
        self,
        request: QueryRequest,
        *,
        allowed_kbs: Iterable[str] | None = None,
        request_id: str | None = None,
    ) -> ContextPack:
        """scope → QUERY_ASSEMBLE → CLASSIFY_QUERY → plans and bridges → merge → rerank →
        parent expansion → pack (the module docstring tells the whole path)."""
        self.validate(request)
        app = self._app
        log = StepLog()
        started = log.now()
        scope = await asyncio.to_thread(self._scope, request, allowed_kbs)
        log.add("scope", "ok", _describe_scope(scope), since=started)
        overrides = self._retrieval_settings(request, scope)
        if scope.empty:
            log.add("retrieve", "skipped", "the scope selects no document")
            return ContextPack(request.text, (), None, tuple(log.items), scope.kb_names)

        ctx = HookContext(
            plugin_namespace=app.settings.plugins.default_namespace,
            kb_names=scope.kb_names,
            request_id=request_id,
        )
        hints = await self._assemble(request, ctx, log)
        decision = await self._route(request, hints, scope, ctx, log)
        decision = prune_visual_plans(request, decision, scope.collections, log)
        decision = with_query_expansions(decision, hints)

        vectors = QueryVectors()  # the query's vectors, embedded once for the refill too
        live, bridged = await self._retrieve(
            request, decision, scope, overrides, ctx, log, shared=vectors
        )
        live, visual = split_results(live)
        merged = await self._merge(request, decision, live, bridged, ctx, log)
        ranked = await self._rerank(request, merged, ctx, log)
        final = await self._expand(request, ranked, merged, live, scope, log)
        depth = self._depth(request)
        deeper = min(MAX_TOP_K, 2 * depth)
        if len(final) < request.top_k and deeper > depth and _lists_full(depth, live, bridged):
            # Summaries whose chunks were listed already were dropped, leaving the list short:
            # the candidates past the lists' depth fill it, after everything ranked.
            more = await self._deeper(
                request, decision, (scope, overrides, ctx), (merged, vectors), deeper, log
            )
            if more:
                pool = (*merged, *more)
                refilled = await self._expand(
                    request, (*ranked, *more), pool, live, scope, StepLog()
                )
                final = _filled(final, refilled, request.top_k)
        config = self._config
        images = rank_visuals(
            visual, k=config.rrf_k, head=config.candidates, limit=request.top_k, log=log
        )
        return await self._pack(request, [*final, *images], decision, scope, log)

    async def _retrieve(
        self,
        request: QueryRequest,
        decision: QueryRouteDecision,
        scope: Scope,
        overrides: dict[str, dict[str, Any]],
        ctx: HookContext,
        log: StepLog,
        depth: int | None = None,
        shared: QueryVectors | None = None,
    ) -> tuple[list[PlanResult], list[RankedList]]:
        """Every plan (on native KBs) and every bridged KB, concurrently, each list ``depth``
        deep (by default ``_depth``); failures are skipped, unless every source failed because a
        backend is down: that raises the outage (503)."""
        depth = depth or self._depth(request)
        plans = decision.plans if scope.native else ()
        bridge_failures: list[Exception] = []
        # Plans embedding the same query with one encoder share its vector.
        shared = shared if shared is not None else QueryVectors()
        results, bridged = await asyncio.gather(
            asyncio.gather(
                *(self._run_plan(request, plan, scope, ctx, depth, shared) for plan in plans)
            ),
            asyncio.gather(
                *(
                    self._run_bridge(
                        request, kb, overrides.get(kb.name, {}), log, bridge_failures, depth
                    )
                    for kb in scope.bridged
                )
            ),
        )
        for result in results:
            log.extend(result.steps)
        live = [r for r in results if not r.failed]
        answered = [ranked for ranked in bridged if ranked is not None]
        if not live and not answered:
            failures = [f for r in results for f in r.failures] + bridge_failures
            outage = total_outage(failures)
            if outage is not None:
                logger.warning("search failed, every source is down: %s", outage.message)
                raise outage
        return live, answered

    @traced("fusion")
    async def _merge(
        self,
        request: QueryRequest,
        decision: QueryRouteDecision,
        live: list[PlanResult],
        bridged: list[RankedList],
        ctx: HookContext,
        log: StepLog,
    ) -> tuple[RetrievedHit, ...]:
        """RETRIEVE_SUPPLEMENT, RRF over plans, bridges and supplements, RRF_POST_MERGE."""
        bus = self._app.bus
        hits_by_plan = {r.plan.collection: r.hits for r in live}
        supplements = await bus.invoke_all(
            hooks.retrieve_supplement,
            ctx=ctx,
            query=request,
            decision=decision,
            hits_by_plan=hits_by_plan,
        )
        extra = [tuple(s) for s in supplements if s]
        lists = [RankedList(r.plan.collection, r.hits) for r in live]
        lists += bridged
        lists += [RankedList(f"supplement{i + 1}", s) for i, s in enumerate(extra)]
        started = log.now()
        merged = tuple(rrf_fuse(lists, k=self._config.rrf_k, head=self._config.candidates))
        log.add("rrf", "ok", f"{len(lists)} lists, k={self._config.rrf_k}", since=started)
        supplement_hits = tuple(h for s in extra for h in s)
        adjusted = await bus.invoke_first(
            hooks.rrf_post_merge, ctx=ctx, query=request, merged=merged, supplements=supplement_hits
        )
        if adjusted is None:
            return merged
        log.add("rrf_post_merge", "ok", "a plugin adjusted the merged list")
        return tuple(adjusted)

    def check(self, request: QueryRequest, *, allowed_kbs: Iterable[str] | None = None) -> None:
        """Raise every caller mistake a search would meet (fields, unknown KBs or documents,
        filters, retrieval settings) before anything starts: a stream answers them with a 4xx
        instead of an error event, an answer leaves no empty session behind."""
        self.validate(request)
        self._retrieval_settings(request, self._scope(request, allowed_kbs))

    def _scope(self, request: QueryRequest, allowed_kbs: Iterable[str] | None) -> Scope:
        registries = self._app.registries
        return resolve_scope(
            self._app.repositories,
            request,
            allowed_kbs=allowed_kbs,
            filter_fields=registries.filter_field_kinds(),
            resolver_for=registries.filter_resolver,
        )

    def validate(self, request: QueryRequest) -> None:
        """Reject a malformed request with a message that names the field."""
        if not isinstance(request.text, str) or not request.text.strip():
            raise InvalidInputError("query text must not be empty", field="query")
        if len(request.text) > MAX_QUERY_CHARS:
            raise InvalidInputError(
                f"query text is longer than {MAX_QUERY_CHARS} characters", field="query"
            )
        if not 1 <= request.top_k <= self._config.max_top_k:
            raise InvalidInputError(
                f"top_k must be between 1 and {self._config.max_top_k}", field="top_k"
            )
        if request.mode not in MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(MODES)}", field="mode")
        if request.token_budget is not None and request.token_budget < 1:
            raise InvalidInputError("token_budget must be positive", field="token_budget")
        for name in ("kb_names", "document_ids", "tags"):
            if len(getattr(request, name)) > MAX_SCOPE_ITEMS * (10 if name != "kb_names" else 1):
                raise InvalidInputError(f"too many {name}", field=name)

    # --- stages ---------------------------------------------------------------------------------

    async def _assemble(
        self, request: QueryRequest, ctx: HookContext, log: StepLog
    ) -> tuple[QueryHints, ...]:
        if not self._app.settings.plugins.query_assemble_enabled:
            return ()
        started = log.now()
        found = await self._app.bus.invoke_all(hooks.query_assemble, ctx=ctx, query=request)
        hints = tuple(h for h in found if h is not None)
        if hints:
            detail = ", ".join(
                f"{h.source} (+{len(h.expansions)} BM25 terms)" if h.expansions else h.source
                for h in hints
            )
            log.add("query_assemble", "ok", detail, since=started)
        return hints

    async def _route(
        self,
        request: QueryRequest,
        hints: tuple[QueryHints, ...],
        scope: Scope,
        ctx: HookContext,
        log: StepLog,
    ) -> QueryRouteDecision:
        app = self._app
        started = log.now()
        decision = await app.bus.invoke_first(
            hooks.classify_query, ctx=ctx, query=request, hints=hints
        )
        if decision is None:  # Core answers unless its own subscriber failed (audited)
            decision = QueryRouteDecision((), classifier="none", reason="no classifier answered")
            log.add(
                "classify_query",
                "error",
                "no CLASSIFY_QUERY subscriber routed the query",
                since=started,
            )
        planned = {p.collection for p in decision.plans}
        forced: list[CollectionQueryPlan] = []
        for collection in sorted(scope.collections - planned - set(BASE_COLLECTIONS)):
            encoder = app.encoders.query_encoder_for(collection) or ""
            forced.append(
                CollectionQueryPlan(
                    collection,
                    encoder,
                    request.top_k,
                    reason="scope: documents in scope were written to this collection",
                )
            )
            if not encoder:
                log.add(f"{collection}:route", "warning", "no query encoder is bound: BM25 only")
        if forced:
            decision = replace(
                decision,
                plans=decision.plans + tuple(forced),
                reason=f"{decision.reason}; scope added {', '.join(p.collection for p in forced)}",
            )
        plans = ", ".join(p.collection for p in decision.plans)
        log.add("classify_query", "ok", f"{decision.classifier}: {plans}", since=started)
        return decision

    async def _run_plan(
        self,
        request: QueryRequest,
        plan: CollectionQueryPlan,
        scope: Scope,
        ctx: HookContext,
        depth: int,
        shared: QueryVectors | None = None,
    ) -> PlanResult:
        try:
            result = await self._orchestrator.run(
                request,
                plan,
                scope.where_for(plan.collection),
                ctx,
                depth=depth,
                shared=shared,
            )
        except Exception as exc:  # a failing plan is skipped and audited, never raised
            reason = describe(exc)
            result = PlanResult(plan, failed=True, failures=[exc])
            log = StepLog()
            log.add(f"{plan.collection}:plan", "error", f"plan skipped: {reason}")
            result.steps = log.items
        if result.failed:
            detail = result.steps[-1].detail if result.steps else ""
            logger.warning("plan %s failed: %s", plan.collection, detail)
            self._app.audit.log_decision(
                "retrieval",
                "plan_failed",
                plugin="core",
                namespace=ctx.plugin_namespace,
                collection=plan.collection,
                reason=detail,
            )
        return result

    async def _filenames(self, document_ids: set[str]) -> dict[str, str]:
        """Filenames for citations, cached: a document's name never changes after upload."""
        missing = document_ids - self._filename_cache.keys()
        if missing:
            found = await asyncio.to_thread(self._app.repositories.documents.filenames, missing)
            if len(self._filename_cache) + len(found) > FILENAME_CACHE:
                self._filename_cache.clear()
            self._filename_cache.update(found)
        return {i: self._filename_cache[i] for i in document_ids if i in self._filename_cache}

    def _depth(self, request: QueryRequest) -> int:
        """Each list's depth: enough for top_k and fusion, and for the rerank pool if one runs.

        Milvus Lite returns rows at ~0.1 ms each, so depth is the main cost a search adds on
        top of embedding the query; it is not made deeper than the next stage can use.
        """
        depth = max(request.top_k, self._config.candidates)
        if request.rerank is not False and self.reranker is not None:
            depth = max(depth, self._config.rerank_pool)
        return depth

    def _retrieval_settings(self, request: QueryRequest, scope: Scope) -> dict[str, dict[str, Any]]:
        """The request's per-KB settings, checked against each KB's engine (a caller mistake
        raises, naming the KB and the field)."""
        bridged = {kb.name: kb for kb in scope.bridged}
        checked: dict[str, dict[str, Any]] = {}
        for name, values in request.retrieval_settings.items():
            if name not in scope.kb_names:
                raise InvalidInputError(
                    f"retrieval_settings names {name!r}, which is not in the query's scope",
                    field="retrieval_settings",
                )
            kb = bridged.get(name)
            schema = self._knowledge.engine(kb.engine).retrieval_schema if kb else ()
            given = {k: v for k, v in values.items() if v is not None}
            checked[name] = validate_settings(schema, given, what=f"retrieval_settings.{name}")
            checked[name] = {k: v for k, v in checked[name].items() if k in given}
        return checked

    async def _run_bridge(
        self,
        request: QueryRequest,
        kb: Any,
        overrides: dict[str, Any],
        log: StepLog,
        failures: list[Exception],
        depth: int,
    ) -> RankedList | None:
        """A KB bound to another engine contributes its ranked list to the same RRF; a failure
        is logged, and kept in ``failures`` for the outage check. The engines take no
        ``filters``, ``document_ids`` or ``tags``: a search narrowed by any leaves the KB out
        (a warning step), rather than mix its unnarrowed hits into results the caller asked
        to be narrowed."""
        started = log.now()
        narrowed = _narrowing(request)
        if narrowed:
            log.add(
                f"{kb.name}:{kb.engine}",
                "warning",
                f"left out: the {kb.engine} engine cannot apply {narrowed}",
            )
            return None
        try:
            engine = self._knowledge.bridge(kb.engine)
            hits = await engine.retrieve(
                EngineQuery(
                    request.text,
                    kb.name,
                    depth,
                    kb.creation_settings,
                    {**kb.retrieval_settings, **overrides},
                )
            )
        except Exception as exc:  # a failing engine costs its KB's hits, never the search
            failures.append(exc)
            reason = describe(exc)
            log.add(f"{kb.name}:{kb.engine}", "warning", f"engine failed: {reason}", since=started)
            self._app.audit.log_decision(
                "retrieval",
                "engine_failed",
                plugin="core",
                namespace=self._app.settings.plugins.default_namespace,
                kb_name=kb.name,
                engine=kb.engine,
                reason=reason,
            )
            return None
        log.add(f"{kb.name}:{kb.engine}", "ok", f"{len(hits)} hits", since=started)
        return RankedList(kb.name, hits)

    async def _rerank(
        self,
        request: QueryRequest,
        merged: tuple[RetrievedHit, ...],
        ctx: HookContext,
        log: StepLog,
    ) -> tuple[RetrievedHit, ...]:
        if request.rerank is False or not merged:
            return merged
        pool, rest = merged[: self._config.rerank_pool], merged[self._config.rerank_pool :]
        started = log.now()
        by_plugin = await self._app.bus.invoke_first(
            hooks.rerank_merged, ctx=ctx, query=request, merged=pool
        )
        if by_plugin is not None:
            log.add("rerank", "ok", "reranked by a plugin (RERANK_MERGED)", since=started)
            return tuple(by_plugin) + rest
        if self.reranker is None:
            log.add("rerank", "skipped", "no reranker is configured: fused order")
            return merged
        reranker = self.reranker
        try:
            rerank = self.tracing.wrap("rerank", reranker.rerank, model=reranker.name)
            scores = await asyncio.to_thread(rerank, request.text, [h.text for h in pool])
        except Exception as exc:
            reason = describe(exc)
            log.add("rerank", "warning", f"reranker failed, fused order kept: {reason}")
            return merged
        order = sorted(range(len(pool)), key=lambda i: -scores[i])
        reranked = tuple(
            replace(pool[i], score=scores[i], scores={**pool[i].scores, "rerank": scores[i]})
            for i in order
        )
        log.add("rerank", "ok", f"{reranker.name} over {len(pool)} hits", since=started)
        return reranked + rest

    async def _deeper(
        self,
        request: QueryRequest,
        decision: QueryRouteDecision,
        where: tuple[Scope, dict[str, dict[str, Any]], HookContext],
        first: tuple[Sequence[RetrievedHit], QueryVectors],
        depth: int,
        log: StepLog,
    ) -> tuple[RetrievedHit, ...]:
        """The candidates of lists ``depth`` deep that the first search did not merge, in their
        merged order (the ranked list before them is not changed); none when that search fails.
        The query is not embedded again: the first search's vectors are reused."""
        started = log.now()
        scope, overrides, ctx = where
        known, vectors = first
        try:
            live, bridged = await self._retrieve(
                request, decision, scope, overrides, ctx, StepLog(), depth, shared=vectors
            )
        except EagleError as exc:
            log.add("expand_refill", "warning", f"no deeper candidates: {exc.message}")
            return ()
        live, _ = split_results(live)
        # Merged as the first lists were (supplements, RRF, RRF_POST_MERGE): a plugin that
        # leaves hits out of the merged list leaves them out of the refill too.
        fused = await self._merge(request, decision, live, bridged, ctx, StepLog())
        seen = {h.dedupe_key for h in known}
        more = tuple(h for h in fused if h.dedupe_key not in seen)
        log.add("expand_refill", "ok", f"{len(more)} candidates past depth {depth}", since=started)
        return more

    @traced("expansion")
    async def _expand(
        self,
        request: QueryRequest,
        ranked: tuple[RetrievedHit, ...],
        pool: tuple[RetrievedHit, ...],
        results: Sequence[PlanResult],
        scope: Scope,
        log: StepLog,
    ) -> list[RetrievedHit]:
        enabled = request.expand_parents
        if enabled is None:
            enabled = self._config.expand_parents
        if not enabled:
            return list(ranked[: request.top_k])
        started = log.now()
        vectors = {r.plan.collection: r.vector for r in results}
        queries = {r.plan.collection: r.sparse_text for r in results}
        try:
            expanded, count = await self._expander.expand(
                ranked,
                pool,
                limit=request.top_k,
                queries=queries,
                vectors=vectors,
                scope=scope.where,
            )
        except EagleError as exc:
            log.add("expand_parents", "warning", f"expansion failed: {exc.message}")
            return list(ranked[: request.top_k])
        if count:
            detail = f"{count} section summaries drilled down"
            log.add("expand_parents", "ok", detail, since=started)
        return expanded

    async def _pack(
        self,
        request: QueryRequest,
        hits: Sequence[RetrievedHit],
        decision: QueryRouteDecision,
        scope: Scope,
        log: StepLog,
    ) -> ContextPack:
        filenames = await self._filenames({h.document_id for h in hits})
        passages = tuple(
            _passage(n, hit, filenames.get(hit.document_id, ""))
            for n, hit in enumerate(hits, start=1)
        )
        tokens: int | None = None
        truncated = False
        if request.token_budget is not None:
            count = self._app.text_encoder.count_tokens
            passages, tokens, truncated = trim_to_budget(passages, request.token_budget, count)
            if truncated:
                detail = f"trimmed to {len(passages)} passages, {tokens} tokens"
                log.add("token_budget", "ok", detail)
        return ContextPack(
            request.text,
            passages,
            decision,
            tuple(log.items),
            scope.kb_names,
            token_count=tokens,
            truncated=truncated,
        )


def _narrowing(request: QueryRequest) -> str:
    """What narrows ``request`` that a bridged engine cannot apply ("" when nothing does)."""
    parts = []
    if request.filters:
        parts.append(f"filters ({', '.join(sorted(request.filters))})")
    if request.document_ids:
        parts.append("document_ids")
    if request.tags:
        parts.append("tags")
    return ", ".join(parts)


def _lists_full(depth: int, live: Sequence[PlanResult], bridged: Sequence[RankedList]) -> bool:
    """Whether some list came back as deep as asked: there may be candidates past it."""
    return any(len(r.hits) >= depth for r in live) or any(len(b.hits) >= depth for b in bridged)


def _filled(
    first: Sequence[RetrievedHit], refilled: Sequence[RetrievedHit], limit: int
) -> list[RetrievedHit]:
    """``first`` as it was, then what the expansion over more candidates adds, up to ``limit``
    (a summary drilling into a deeper candidate must not reorder what was ranked already)."""
    taken = {h.dedupe_key for h in first}
    return [*first, *(h for h in refilled if h.dedupe_key not in taken)][:limit]


def _passage(citation: int, hit: RetrievedHit, filename: str) -> Passage:
    filename = filename or str(hit.metadata.get("filename", ""))
    metadata = dict(hit.metadata)
    pages = tuple(int(p) for p in metadata.pop("page_nums", ()) or ())
    kind = str(metadata.pop("type", "text"))
    return Passage(
        citation=citation,
        chunk_id=hit.chunk_id,
        text=hit.text,
        path=hit.path,
        page_nums=pages,
        document_id=hit.document_id,
        filename=filename,
        kb_name=hit.kb_name,
        collection=hit.collection,
        type=kind,
        score=hit.score,
        scores=dict(hit.scores),
        metadata=metadata,
    )


def with_query_expansions(
    decision: QueryRouteDecision, hints: Sequence[QueryHints]
) -> QueryRouteDecision:
    """Every plan's BM25 query gains QUERY_ASSEMBLE's expansions (once each, in order), as
    QUERY_DENSE_EXPAND's sparse terms do; the dense query stays the text as typed."""
    expansions = tuple(dict.fromkeys(e for h in hints for e in h.expansions if e.strip()))
    if not expansions:
        return decision
    plans = tuple(replace(p, sparse_terms=(*p.sparse_terms, *expansions)) for p in decision.plans)
    return replace(decision, plans=plans)


def _describe_scope(scope: Scope) -> str:
    kbs = ", ".join(scope.kb_names) or "none"
    if scope.document_ids is None:
        documents = "all documents"
    else:
        documents = f"{len(scope.document_ids)} documents"
    return f"knowledge bases: {kbs}; {documents}"
