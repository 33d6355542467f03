"""The read-only MCP tools: a semantic-context pack for a question, and past analyses.

Both search the namespace's ``eagle_text`` with Core's per-plan retrieval (dense + BM25 through
the hook bus, so this plugin's query expansion applies), put exact-name matches first, and
admit the caller exactly as Core's tools do (API key, its knowledge bases). Like a search,
they read completed documents only (a document being ingested is not evidence yet), and a
result's ``score`` is its relevance in [0, 1] as Core's tools show it (1 for an object the
question names). Nothing here runs SQL or changes anything: the pack is for the agent to write
SQL from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from eagle_rag.api.security import Gatekeeper
from eagle_rag.errors import InvalidInputError
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import Filter, all_of, in_, json_in
from eagle_rag.mcp.caller import mcp_caller
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.encoder_registry import EncoderRegistry
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import CollectionQueryPlan, QueryRequest, RetrievedHit
from eagle_rag.retrieval.background import dense_background
from eagle_rag.retrieval.orchestrator import RetrieverOrchestrator
from eagle_rag.retrieval.relevance import relevance
from eagle_rag.retrieval.scope import excluding
from eagle_rag.settings import Settings
from plugins.lakehouse_bi.enrich import hit_node
from plugins.lakehouse_bi.exact import EXACT_KEY, GRAIN_MATCH, exact_first, named_hits
from plugins.lakehouse_bi.lineage import LineageGraph, LineageIndex
from plugins.lakehouse_bi.model import RELATIONS

MAX_TOP_K = 50
SEMANTIC_TYPES = (
    "model",
    "column",
    "source_table",
    "metric",
    "measure",
    "dimension",
    "entity",
    "semantic_model",
    "explore",
    "view",
    "cube",
    "exposure",
    "doc",
    "table",
)
# Formats a past analysis comes in (Core's source types; semantic files get their own).
ANALYSIS_SOURCES = ("markdown", "text", "html", "pdf", "docx", "pptx", "json", "csv", "xlsx")


class LakehouseTools:
    def __init__(
        self,
        *,
        settings: Settings,
        bus: HookBus,
        vectors: Any,
        text_encoder: str,
        index: LineageIndex,
        terms: Callable[[str], Any],
        knowledge_bases: Any = None,
        documents: Any = None,
        encoders: EncoderRegistry | None = None,
    ) -> None:
        config = settings.retrieval
        self._knowledge_bases = knowledge_bases  # the host's catalog: an unknown KB is a 404
        self._documents = documents  # the host's documents: which ones are not completed
        self._settings = settings
        self._gate = Gatekeeper(settings)
        self._vectors = vectors
        self._encoder = text_encoder
        self._index = index
        self._terms = terms
        self._candidates = config.candidates
        self._orchestrator = RetrieverOrchestrator(
            bus,
            vectors,
            fusion=config.hybrid_fusion,
            rrf_k=config.rrf_k,
            head=config.candidates,
            background=dense_background(config, encoders),
        )

    # --- tools ----------------------------------------------------------------------------------

    async def query_semantic_context(
        self,
        question: str,
        kb_names: list[str] | None = None,
        top_k: int = 8,
        object_types: list[str] | None = None,
    ) -> dict[str, Any]:
        """Models, columns, metrics... for ``question``, with definitions and lineage."""
        kbs = self._admit(kb_names)
        types = list(object_types or SEMANTIC_TYPES)
        unknown = sorted(set(types) - set(SEMANTIC_TYPES))
        if unknown:
            raise InvalidInputError(
                f"unknown object_types: {', '.join(unknown)}", field="object_types"
            )
        where = all_of(_kbs(kbs), json_in("metadata", "object_type", types))
        hits = await self.search(question, kbs, top_k, where)
        lineage = await asyncio.to_thread(
            self._index.graph, kbs or sorted({h.kb_name for h in hits})
        )
        terms = self._terms(question)
        return {
            "question": question,
            "identifiers": list(terms.identifiers),
            "translations": list(terms.translations),
            "objects": [
                _object(n, h, lineage.of(h.kb_name, str(_fields(h).get("project", ""))))
                for n, h in enumerate(hits, start=1)
            ],
            "note": "Definitions only: Eagle-RAG runs no SQL. Cite objects by their path.",
        }

    async def retrieve_historical_analysis(
        self,
        question: str,
        kb_names: list[str] | None = None,
        models: list[str] | None = None,
        top_k: int = 5,
    ) -> dict[str, Any]:
        """Reports, notebooks and write-ups about ``question`` or that mention ``models``."""
        kbs = self._admit(kb_names)
        named = [m for m in (models or []) if m.strip()]
        text = " ".join([question, *named])
        where = all_of(_kbs(kbs), json_in("metadata", "source_type", ANALYSIS_SOURCES))
        hits = await self.search(text, kbs, top_k, where)
        lineage = await asyncio.to_thread(
            self._index.graph, kbs or sorted({h.kb_name for h in hits})
        )
        known = set(named) | lineage.names()
        return {
            "question": question,
            "analyses": [
                {
                    "citation": n,
                    "text": h.text,
                    "path": h.path,
                    "document_id": h.document_id,
                    "filename": _fields(h).get("filename", ""),
                    "kb_name": h.kb_name,
                    "score": h.score,
                    "mentions": sorted(m for m in known if _mentions(h.text, m)),
                }
                for n, h in enumerate(hits, start=1)
            ],
        }

    # --- search ---------------------------------------------------------------------------------

    async def search(
        self, text: str, kbs: Sequence[str], top_k: int, where: Filter
    ) -> list[RetrievedHit]:
        if not text.strip():
            raise InvalidInputError("the question must not be empty", field="question")
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInputError(f"top_k must be between 1 and {MAX_TOP_K}", field="top_k")
        request = QueryRequest(text, kb_names=tuple(kbs), top_k=top_k)
        ctx = HookContext(
            plugin_namespace=self._settings.plugins.default_namespace, kb_names=tuple(kbs)
        )
        plan = CollectionQueryPlan(
            TEXT_COLLECTION, self._encoder, top_k, reason="lakehouse-bi tool"
        )
        depth = max(top_k, self._candidates)
        where = all_of(where, await asyncio.to_thread(self._unfinished, kbs))
        result = await self._orchestrator.run(request, plan, where, ctx, depth=depth)
        terms = self._terms(text)
        exact = await asyncio.to_thread(named_hits, self._vectors, terms, where, result.hits)
        named = {h.dedupe_key for h in exact if h.metadata[EXACT_KEY][0] < GRAIN_MATCH}
        ranked = exact_first(result.hits, exact)[:top_k]
        # Capped as REST caps a list (retrieval/wire.py): never rising down it, so that a
        # threshold keeps a prefix (0.5191 above 0.5964 was shown as it came).
        cap = 1.0
        shown = []
        for hit in ranked:
            cap = min(cap, 1.0 if hit.dedupe_key in named else relevance(hit.scores, hit.metadata))
            shown.append(replace(hit, score=cap))
        return shown

    def _unfinished(self, kbs: Sequence[str]) -> Filter | None:
        """The filter that leaves out documents not completed yet (retrieval/scope.py)."""
        if self._documents is None or self._knowledge_bases is None:
            return None
        names = list(kbs) or [kb.name for kb in self._knowledge_bases.list()]
        return excluding(self._documents.ids_with_unfinished_rows(names))

    def _admit(self, kb_names: list[str] | None) -> list[str]:
        """The KBs to read (empty: all of the namespace), admitted as Core's tools admit them."""
        scope = mcp_caller(self._gate).scope(kb_names or ())
        if self._knowledge_bases is not None:
            for name in kb_names or ():
                self._knowledge_bases.get(name)  # NotFoundError, as in Core's tools
        return list(scope) if scope is not None else []


def _kbs(kbs: Sequence[str]) -> Filter | None:
    return in_("kb_name", kbs) if kbs else None


def _fields(hit: RetrievedHit) -> dict[str, Any]:
    fields = hit.metadata.get("fields")
    return dict(fields) if isinstance(fields, dict) else {}


def _mentions(text: str, name: str) -> bool:
    lowered = text.lower()
    needle = name.lower()
    start = lowered.find(needle)
    while start != -1:
        before = lowered[start - 1] if start else " "
        after = lowered[start + len(needle)] if start + len(needle) < len(lowered) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = lowered.find(needle, start + 1)
    return False


def _object(citation: int, hit: RetrievedHit, graph: LineageGraph) -> dict[str, Any]:
    fields = _fields(hit)
    kind = str(fields.get("object_type", ""))
    name = str(fields.get("name", ""))
    node = hit_node(fields)  # a metric's own, a column's its model's: as hits show it
    item: dict[str, Any] = {
        "citation": citation,
        "object_type": kind,
        "name": name,
        "model": fields.get("model", ""),
        "path": hit.path,
        "definition": hit.text,
        "data_type": fields.get("data_type", ""),
        "grain": fields.get("grain", ""),
        "tests": fields.get("tests", []),
        "owner": fields.get("owner", ""),
        "tags": fields.get("tags", []),
        "source": {
            "document_id": hit.document_id,
            "filename": fields.get("filename", ""),
            "kb_name": hit.kb_name,
            "chunk_id": hit.chunk_id,
        },
        "score": hit.score,
    }
    if node[1]:
        item["lineage"] = {"of": node[1], **graph.lineage(node)}
    if kind in RELATIONS:
        item["columns"] = [
            {
                "name": o.name,
                "object_type": o.object_type,
                "data_type": o.data_type,
                "description": o.description,
            }
            for o, _ in graph.children.get(node, [])
        ]
    return item
