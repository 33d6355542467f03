"""The biomed MCP tools, both read-only: what a text names, and evidence about a compound."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from eagle_rag.api.security import Gatekeeper
from eagle_rag.errors import InvalidInputError
from eagle_rag.index.filters import all_of, in_
from eagle_rag.mcp.caller import mcp_caller
from eagle_rag.plugins.payloads import RetrievedHit
from eagle_rag.retrieval.background import DenseBackground
from eagle_rag.retrieval.fusion import RankedList, normalized_fuse
from eagle_rag.retrieval.hits import to_hit
from eagle_rag.retrieval.relevance import relevance
from eagle_rag.retrieval.scope import excluding
from plugins.biomed.abbreviations import find_pairs
from plugins.biomed.collection import entity_filter, hit_entities, hit_section
from plugins.biomed.runtime import BiomedRuntime
from plugins.biomed.sections import query_intents

MAX_TEXT_CHARS = 20_000
MAX_TOP_K = 50


class BiomedTools:
    """Handlers registered as ``biomed_query_entities`` and ``biomed_retrieve_compounds``."""

    def __init__(
        self,
        runtime: BiomedRuntime,
        gate: Gatekeeper,
        host: Any = None,
        background: DenseBackground | None = None,
    ) -> None:
        self._rt = runtime
        self._gate = gate  # admits each caller as Core's tools do (API key, its KBs)
        self._host = host  # HostServices: the catalog (unknown KBs, unfinished documents)
        # A compound's evidence is a short list (only chunks naming it): its last hit is
        # evidence, not the background, so relevance counts from probe texts (background.py),
        # as Core's search does. Without it one passage scored 0.5 whatever it said.
        self._background = background

    async def query_entities(self, text: str) -> dict[str, Any]:
        """Entities a text names (lexicon ids, names, synonyms, mentions), its abbreviations
        and the intent of a question."""
        caller = mcp_caller(self._gate)  # admitted as every tool is: key, namespace, rate limit
        _check_text(text, "text")
        # Abbreviations learned from the KBs the key may read only: a long form is their text.
        kbs = None if caller.kb_names is None else tuple(caller.kb_names)
        return await asyncio.to_thread(self._entities, text, kbs)

    def _entities(self, text: str, kbs: tuple[str, ...] | None) -> dict[str, Any]:
        finder = self._rt.finder
        grouped: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        for mention in finder.mentions(text, kbs):
            grouped.setdefault(mention.concept_id, []).append(
                {
                    "surface": mention.surface,
                    "start": mention.start,
                    "end": mention.end,
                    "via": mention.via,
                }
            )
        entities = [
            {
                "id": concept_id,
                "name": finder.name_of(concept_id, kbs),
                "synonyms": list(finder.synonyms_of(concept_id, kbs)[1:]),
                "mentions": mentions,
            }
            for concept_id, mentions in grouped.items()
        ]
        abbreviations = [{"short": s, "long": lf} for s, lf in dict(find_pairs(text)).items()]
        return {
            "entities": entities,
            "abbreviations": abbreviations,
            "intents": list(query_intents(text)),
            "lexicon": list(finder.lexicon.sources),
        }

    async def retrieve_compounds(
        self, compound: str, kb_name: str | None = None, top_k: int = 5
    ) -> dict[str, Any]:
        """Evidence passages about a named drug or compound: chunks that name it, best first."""
        _check_text(compound, "compound")
        scope = mcp_caller(self._gate).scope([kb_name] if kb_name else ())
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInputError(f"top_k must be between 1 and {MAX_TOP_K}", field="top_k")
        evidence = await asyncio.to_thread(self._evidence, kb_name, scope)
        rt = self._rt
        ids = rt.query_entities(compound, scope)
        if not ids:
            raise InvalidInputError(
                f"{compound!r} names no entity of the biomedical lexicon", field="compound"
            )
        where = all_of(in_("kb_name", scope) if scope else None, evidence, entity_filter(ids))
        names = [name for i in ids for name in rt.finder.synonyms_of(i, scope)[:5]]
        hits = await self._search(" ".join([compound, *names]), where, max(top_k, rt.candidates))
        return {
            "compound": [{"id": i, "name": rt.finder.name_of(i, scope)} for i in ids],
            "passages": [_passage(h, ids) for h in hits[:top_k]],
        }

    def _evidence(self, kb_name: str | None, scope: tuple[str, ...] | None) -> Any:
        """NotFoundError for an unknown ``kb_name``; the filter that leaves out documents not
        completed yet (scope.py: only completed documents are evidence), or None."""
        catalog = getattr(self._host, "knowledge_bases", None)
        documents = getattr(self._host, "documents", None)
        if catalog is None or documents is None:
            return None
        if kb_name:
            catalog.get(kb_name)
        kbs = scope if scope is not None else [kb.name for kb in catalog.list()]
        return excluding(documents.ids_with_unfinished_rows(kbs))

    async def _search(self, text: str, where: Any, depth: int) -> list[RetrievedHit]:
        """Dense and BM25 over the specialized collection, fused like a Core plan."""
        rt = self._rt
        encoder = rt.encoders.get(rt.query_encoder)
        vectors = await asyncio.to_thread(encoder.embed_queries, [text])
        vector = [float(x) for x in vectors[0]]
        dense, sparse = await asyncio.gather(
            asyncio.to_thread(
                rt.vectors.search_dense, rt.collection, [vector], top_k=depth, where=where
            ),
            asyncio.to_thread(
                rt.vectors.search_sparse, rt.collection, [text], top_k=depth, where=where
            ),
        )
        found = [to_hit(rt.collection, h, stage="dense") for h in dense[0]]
        level = await self._short_list_background(vector, found)
        lists = [
            RankedList("dense", found, background=level),
            RankedList(
                "sparse", [to_hit(rt.collection, h, stage="sparse") for h in sparse[0]], zero=0.0
            ),
        ]
        return normalized_fuse(lists, head=rt.candidates)

    async def _short_list_background(
        self, vector: list[float], found: list[RetrievedHit]
    ) -> float | None:
        rt = self._rt
        if self._background is None:
            return None
        passages = rt.encoders.get(rt.passage_encoder)

        async def embed(texts: Sequence[str]) -> Sequence[Sequence[float]]:
            vectors: Sequence[Sequence[float]] = await asyncio.to_thread(
                passages.embed_passages, list(texts)
            )
            return vectors

        return await self._background.for_short_list(
            rt.passage_encoder, vector, len(found), rt.candidates, embed
        )


def _passage(hit: RetrievedHit, ids: list[str]) -> dict[str, Any]:
    named = hit_entities(hit.metadata)
    return {
        "chunk_id": hit.chunk_id,
        "document_id": hit.document_id,
        "kb_name": hit.kb_name,
        "path": hit.path,
        "text": hit.text,
        "score": relevance(hit.scores, hit.metadata),  # in [0, 1], as Core's tools show
        "section": hit_section(hit.metadata),
        "matched_entities": [i for i in ids if i in named],
    }


def _check_text(text: str, field: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"{field} must not be empty", field=field)
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInputError(f"{field} is longer than {MAX_TEXT_CHARS} characters", field=field)
