"""The visual half of a search: which visual plans run, and how their hits are ranked.

CLASSIFY_QUERY adds the ``eagle_visual`` plan for ``mode=hybrid`` and for image requests. A
hybrid query whose scope holds no document with visuals skips it (no search is spent on an
empty collection); an explicit image request (``with_images``) always runs it.

Visual hits are ranked among themselves: each plan's dense and BM25 lists are fused like any
plan's, the visual plans are merged by RRF, and the best ``top_k`` come back under
``sources.image`` beside the text passages, never in their place (there is no visual
reranker, as the seed says: images keep the fused order). Each visual is its own item, keyed
by image id (retrieval/hits.py); its ``source_chunk_id`` anchor ties it to its text chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.plugins.payloads import QueryRequest, QueryRouteDecision, RetrievedHit
from eagle_rag.retrieval.fusion import RankedList, rrf_fuse
from eagle_rag.retrieval.orchestrator import PlanResult
from eagle_rag.retrieval.pack import StepLog


def is_visual_collection(collection: str) -> bool:
    return collection == VISUAL_COLLECTION or collection.endswith("_visual")


def prune_visual_plans(
    request: QueryRequest,
    decision: QueryRouteDecision,
    collections: frozenset[str],
    log: StepLog,
) -> QueryRouteDecision:
    """Drop visual plans of a hybrid query when no document in scope wrote visuals."""
    if request.with_images:
        return decision
    kept = tuple(
        p
        for p in decision.plans
        if not is_visual_collection(p.collection) or p.collection in collections
    )
    if len(kept) == len(decision.plans):
        return decision
    log.add(f"{VISUAL_COLLECTION}:plan", "skipped", "no document in scope has visuals")
    return replace(decision, plans=kept)


def split_results(results: Sequence[PlanResult]) -> tuple[list[PlanResult], list[PlanResult]]:
    """(text plans, visual plans)."""
    text = [r for r in results if not is_visual_collection(r.plan.collection)]
    visual = [r for r in results if is_visual_collection(r.plan.collection)]
    return text, visual


def rank_visuals(
    results: Sequence[PlanResult], *, k: int, head: int, limit: int, log: StepLog
) -> list[RetrievedHit]:
    """The best ``limit`` visuals over every visual plan, by RRF (one item per image)."""
    if not results:
        return []
    started = log.now()
    lists = [RankedList(r.plan.collection, r.hits) for r in results]
    fused = rrf_fuse(lists, k=k, head=head, score_name="rrf")[:limit]
    log.add("visual_rrf", "ok", f"{len(fused)} images from {len(lists)} lists", since=started)
    return fused
