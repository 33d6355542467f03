"""Query hooks: CLASSIFY_QUERY, QUERY_DENSE_EXPAND, RETRIEVE_SUPPLEMENT, RRF_POST_MERGE and
RERANK_MERGED. Every one abstains (returns None) for a query that names no lexicon entity,
so such a query runs exactly as in Core (the seed: pure text stays on eagle_text).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from eagle_rag.errors import EagleError
from eagle_rag.index.collections import DENSE_FIELD, TEXT_COLLECTION
from eagle_rag.index.filters import Filter, all_of, in_
from eagle_rag.index.sparse import content_tokens
from eagle_rag.plugins.core_defaults import core_route
from eagle_rag.plugins.payloads import (
    CollectionQueryPlan,
    EmbedRequest,
    QueryExpansion,
    QueryRequest,
    QueryRouteDecision,
    RetrievedHit,
)
from eagle_rag.retrieval.fusion import RankedList, rrf_fuse
from eagle_rag.retrieval.hits import to_hit
from plugins.biomed.collection import concept_token, entity_filter
from plugins.biomed.early_supplement import discard
from plugins.biomed.feedback import cosines, feedback_vector
from plugins.biomed.runtime import BiomedRuntime
from plugins.biomed.scoring import refuse_text_collections, rerank_with_signals
from plugins.biomed.sections import INTENT_SECTIONS, query_intents
from plugins.biomed.terms import tokens

NAMESPACE = "biomed"
logger = logging.getLogger(__name__)


class QueryHooks:
    """The query-side subscribers of one app's biomed plugin."""

    def __init__(self, runtime: BiomedRuntime) -> None:
        self._rt = runtime

    @property
    def _text_collections(self) -> tuple[str, str]:
        return (TEXT_COLLECTION, self._rt.collection)

    def classify_query(self, query: QueryRequest, ctx: object) -> QueryRouteDecision | None:
        """CLASSIFY_QUERY: Core's plans plus the specialized one when the query names entities
        (eagle_text's dense only unless ``base_bm25``: the view's BM25 stands in for it), and
        the entity-anchored supplement search started, to run beside the plans."""
        rt = self._rt
        kbs = _kb_scope(ctx)
        entities = rt.query_entities(query.text, kbs)
        if not entities and not rt.options.default_dual_text_search:
            return None  # abstain: Core routes
        self._start_supplement(query, entities, kbs)
        core = core_route(query, rt.text_encoder, rt.encoders)
        if entities and not rt.options.base_bm25:
            core = replace(core, plans=tuple(_dense_only(p) for p in core.plans))
        names = ", ".join(rt.finder.name_of(e, kbs) for e in entities[:5]) or "dual text search"
        same_vectors = rt.passage_encoder == rt.text_encoder
        view = "" if same_vectors and not rt.options.view_dense else rt.query_encoder
        # An exploratory collection holds rows of its own (no base plan's dense list covers
        # them), so it is searched dense and BM25 with the view's query encoder.
        encoders = {rt.collection: view} | dict.fromkeys(rt.exploratory, rt.query_encoder)
        extra = tuple(
            CollectionQueryPlan(name, encoder, query.top_k, reason=f"biomed: {names}")
            for name, encoder in encoders.items()
            if name not in {p.collection for p in core.plans}
        )
        return QueryRouteDecision(
            core.plans + extra, classifier=NAMESPACE, reason=f"biomed entities: {names}"
        )

    def dense_expand(
        self, query: QueryRequest, plan: CollectionQueryPlan, ctx: object
    ) -> QueryExpansion | None:
        """QUERY_DENSE_EXPAND, for the specialized plan only: the entities' concept tokens (and
        their other names' words) to BM25, entities and intent to the hints. The eagle_text
        plan keeps Core's query, so its lists are Core's (the fusion adds the view's)."""
        rt = self._rt
        if plan.collection != rt.collection:
            return None
        kbs = _kb_scope(ctx)
        entities = rt.query_entities(query.text, kbs)
        if not entities:
            return None
        expand = rt.options.expand_sparse
        terms = self._expansion_terms(query.text, entities, kbs) if expand else ()
        concepts = self._concept_terms(entities)
        intents = query_intents(query.text)
        hints = {"biomed_entities": entities, "biomed_intents": list(intents)}
        return QueryExpansion(sparse_terms=concepts + terms, hints=hints)

    def _concept_terms(self, entities: list[str]) -> tuple[str, ...]:
        """The first entities' concept tokens, at most ``max_expansion_terms`` (a query naming
        hundreds of entities must not grow its BM25 query without bound)."""
        if not self._rt.options.concept_terms:
            return ()
        limit = self._rt.options.max_expansion_terms
        return tuple(concept_token(e) for e in entities[:limit])

    def _expansion_terms(
        self, text: str, entities: list[str], kbs: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Words of the entities' other names that the query does not already contain."""
        seen = {t.norm for t in tokens(text)}
        terms: list[str] = []
        for entity in entities:
            for name in self._rt.finder.synonyms_of(entity, kbs):
                words = _word_norms(name)
                fresh = [w for w, norm in words if norm not in seen]
                seen.update(norm for _, norm in words)
                terms.extend(fresh)
        return tuple(terms[: self._rt.options.max_expansion_terms])

    async def supplement(
        self, query: QueryRequest, hits_by_plan: Mapping[str, tuple[RetrievedHit, ...]], ctx: object
    ) -> tuple[RetrievedHit, ...] | None:
        """RETRIEVE_SUPPLEMENT, for an entity query: the dense feedback list (feedback.py) and,
        when on, the entity-anchored BM25 search; two lists are fused into one by RRF."""
        rt = self._rt
        kb_names = _kb_scope(ctx)
        entities = rt.query_entities(query.text, kb_names)
        started = rt.early_supplements.take(_supplement_key(query, entities, kb_names))
        if not entities or rt.collection not in hits_by_plan:
            if started is not None:
                discard(started)
            return None
        scope = _scope_filter(query, hits_by_plan, kb_names)
        found: list[tuple[RetrievedHit, ...]] = []
        if rt.options.supplement and started is not None:
            found.append(tuple(await started))
        elif started is not None:
            discard(started)
        elif rt.options.supplement and scope is not None:
            found.append(await self._supplement_search(query, entities, scope, kb_names))
        if rt.options.feedback:
            found.append(await self._feedback_list(query, hits_by_plan))
        return self._one_list([hits for hits in found if hits])

    def _one_list(self, found: list[tuple[RetrievedHit, ...]]) -> tuple[RetrievedHit, ...] | None:
        if len(found) < 2:
            return found[0] if found else None
        lists = [RankedList(f"supplement{i}", hits) for i, hits in enumerate(found)]
        return tuple(rrf_fuse(lists, k=self._rt.rrf_k, head=self._rt.candidates))

    async def _feedback_list(
        self, query: QueryRequest, hits_by_plan: Mapping[str, tuple[RetrievedHit, ...]]
    ) -> tuple[RetrievedHit, ...]:
        """The text plans' heads, reordered by the query's vector moved toward their first
        passages (feedback.py). Their stored vectors are read back in one query by id."""
        rt = self._rt
        heads = [
            RankedList(name, hits[: rt.candidates])
            for name, hits in hits_by_plan.items()
            if name in self._text_collections
        ]
        pool: dict[str, RetrievedHit] = {}
        for ranked in heads:
            for hit in ranked.hits:
                pool.setdefault(hit.chunk_id, hit)
        if not pool:
            return ()
        rows = await asyncio.to_thread(
            rt.vectors.query,
            TEXT_COLLECTION,
            in_("id", list(pool)),
            output_fields=["id", DENSE_FIELD],
            limit=len(pool),
        )
        stored = {str(r["id"]): r[DENSE_FIELD] for r in rows if r.get(DENSE_FIELD) is not None}
        merged = rrf_fuse(heads, k=rt.rrf_k, head=rt.candidates)
        first = [stored[h.chunk_id] for h in merged if h.chunk_id in stored]
        request = EmbedRequest((query.text,), rt.text_encoder, purpose="query")
        embedded = await rt.query_embeddings.embed(request)
        vector = feedback_vector(
            embedded.vectors[0], first[: rt.options.feedback_passages], rt.options.feedback_weight
        )
        if vector is None:
            return ()
        ids = [chunk for chunk in pool if chunk in stored]
        scores = cosines(vector, [stored[chunk] for chunk in ids])
        order = sorted(zip(ids, scores, strict=True), key=lambda pair: -pair[1])
        return tuple(
            replace(pool[chunk], score=score, scores={**pool[chunk].scores, "feedback": score})
            for chunk, score in order
        )

    def _start_supplement(
        self, query: QueryRequest, entities: list[str], kb_names: tuple[str, ...]
    ) -> None:
        """Start the supplement of a KB-scoped entity query now (see early_supplement.py); a
        query narrowed by documents, tags or filters waits for its plans' hits instead."""
        rt = self._rt
        narrowed = query.document_ids or query.tags or query.filters
        if not entities or not rt.options.supplement or not kb_names or narrowed:
            return
        scope = in_("kb_name", list(kb_names))
        rt.early_supplements.start(
            _supplement_key(query, entities, tuple(kb_names)),
            lambda: self._supplement_search(query, entities, scope, kb_names),
        )

    async def _supplement_search(
        self, query: QueryRequest, entities: list[str], scope: Filter, kbs: tuple[str, ...]
    ) -> tuple[RetrievedHit, ...]:
        rt = self._rt
        names = [name for e in entities for name in rt.finder.synonyms_of(e, kbs)[:3]]
        text = " ".join([query.text, *names, *self._concept_terms(entities)])
        where = all_of(scope, entity_filter(entities))
        found = await asyncio.to_thread(
            rt.vectors.search_sparse, rt.collection, [text], top_k=rt.candidates, where=where
        )
        return tuple(to_hit(rt.collection, h, stage="supplement") for h in found[0])

    def post_merge(
        self,
        query: QueryRequest,
        merged: tuple[RetrievedHit, ...],
        supplements: tuple[RetrievedHit, ...],
    ) -> tuple[RetrievedHit, ...] | None:
        """RRF_POST_MERGE: one fusion over both text collections (see scoring.py)."""
        rt = self._rt
        if not rt.options.refuse_split_collections or rt.query_encoder != rt.text_encoder:
            return None  # different embedding spaces: RRF is the right merge
        collections = {h.collection for h in merged} | {h.collection for h in supplements}
        if not collections or not collections <= set(self._text_collections):
            return None  # visual or engine hits: keep the RRF merge
        if len(collections) == 1 and not supplements:
            return None  # one plan's list is already fused this way: nothing to change
        fused = refuse_text_collections(
            merged,
            supplements,
            head=rt.candidates,
            supplement_weight=rt.options.supplement_weight,
            sparse_tells_relevance=bool(content_tokens(query.text)),
        )
        return tuple(fused)

    async def rerank_merged(
        self, query: QueryRequest, merged: tuple[RetrievedHit, ...], ctx: object
    ) -> tuple[RetrievedHit, ...] | None:
        """RERANK_MERGED: fused score + entity overlap + section/intent (+ cross-encoder)."""
        rt = self._rt
        entities = rt.query_entities(query.text, _kb_scope(ctx))
        if not entities or not merged:
            return None  # Core's configured reranker (or the fused order) applies
        sections = tuple(s for i in query_intents(query.text) for s in INTENT_SECTIONS[i])
        cross = await self._cross_encoder(query, merged)
        reranked = rerank_with_signals(
            merged,
            query_entities=entities,
            preferred_sections=sections,
            idf=rt.finder.book.idf,
            weights=rt.options.weights,
            cross_encoder=cross,
        )
        return tuple(reranked)

    async def _cross_encoder(
        self, query: QueryRequest, merged: tuple[RetrievedHit, ...]
    ) -> dict[int, float] | None:
        return await _cross_encoder_scores(self._rt.reranker, query, merged)


async def _cross_encoder_scores(
    reranker: Any, query: QueryRequest, merged: tuple[RetrievedHit, ...]
) -> dict[int, float] | None:
    """Scores by index from the optional cross-encoder; None when there is none or it fails
    (the signals still rerank; the failure is logged, the search goes on)."""
    if reranker is None:
        return None
    try:
        scores = await asyncio.to_thread(reranker.rerank, query.text, [h.text for h in merged])
    except EagleError as exc:
        logger.warning("biomed cross-encoder failed, signals only: %s", exc.message)
        return None
    return {i: float(s) for i, s in enumerate(scores) if math.isfinite(s)}


def _dense_only(plan: CollectionQueryPlan) -> CollectionQueryPlan:
    """The eagle_text plan without its BM25 half (the view's BM25 stands in for it)."""
    return replace(plan, hybrid=False) if plan.collection == TEXT_COLLECTION else plan


def _supplement_key(
    query: QueryRequest, entities: list[str], kb_names: tuple[str, ...]
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return (query.text, tuple(kb_names), tuple(entities))


def _kb_scope(ctx: object) -> tuple[str, ...]:
    """The search's resolved knowledge bases: the only ones whose abbreviations it may use."""
    return tuple(getattr(ctx, "kb_names", ()))


def _word_norms(name: str) -> list[tuple[str, str]]:
    """(word, normalised form) of each token of a name."""
    return [(t.surface, t.norm) for t in tokens(name)]


def _scope_filter(
    query: QueryRequest,
    hits_by_plan: Mapping[str, tuple[RetrievedHit, ...]],
    kb_names: tuple[str, ...],
) -> Filter | None:
    """The supplement's scope, never wider than the query's.

    The hook is not handed the resolved scope: a query scoped by KB only is scoped here by
    its KBs; one narrowed by documents, tags or filters is held to the documents its plans
    found (all inside the scope), so a supplement can never reach outside it.
    """
    if not kb_names:
        return None
    kbs = in_("kb_name", list(kb_names))
    if not (query.document_ids or query.tags or query.filters):
        return kbs
    documents = sorted({h.document_id for hits in hits_by_plan.values() for h in hits})
    return all_of(kbs, in_("document_id", documents)) if documents else None
