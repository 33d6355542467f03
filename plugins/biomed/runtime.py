"""What the biomed hooks share inside one app: options, entity finder, encoders and the store."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from plugins.biomed.abbreviations import KbScope
from plugins.biomed.early_supplement import EarlySupplements
from plugins.biomed.entities import EntityFinder, Mention
from plugins.biomed.options import BiomedOptions
from plugins.biomed.timings import HookTimings

QUERY_CACHE = 512
KbKey = tuple[str, ...] | None  # a query's KB scope as a cache key part


@dataclass(slots=True)
class BiomedRuntime:
    """Built by ``on_load``; the hook classes read it, the app owns it (no module state)."""

    options: BiomedOptions
    finder: EntityFinder
    vectors: Any  # the namespace's VectorStore
    encoders: Any  # the host's EncoderRegistry
    text_encoder: str  # the host's (eagle_text) encoder
    passage_encoder: str  # writes the specialized collection
    query_encoder: str  # embeds queries for it
    candidates: int  # fusion head (settings.retrieval.candidates)
    rrf_k: int = 60  # Core's RRF constant (settings.retrieval.rrf_k)
    reranker: Any = None  # an optional cross-encoder endpoint (HttpReranker)
    timings: HookTimings = field(default_factory=HookTimings)
    query_embeddings: Any = None  # SharedQueryEmbeddings (EMBED_TEXT for queries)
    early_supplements: EarlySupplements = field(default_factory=EarlySupplements)
    # The options' exploratory_search_collections that exist (ensure_collections checks).
    exploratory: tuple[str, ...] = ()
    _queries: OrderedDict[tuple[str, KbKey], tuple[Mention, ...]] = field(
        default_factory=OrderedDict
    )
    _queries_version: int = -1  # the book's version the cached mentions were found with

    @property
    def collection(self) -> str:
        return self.options.collection

    def query_mentions(self, text: str, kbs: KbScope) -> tuple[Mention, ...]:
        """A query's mentions with the abbreviations of the KBs ``kbs`` (its scope), cached:
        four hooks of one search ask for the same text. The cache is dropped when the
        abbreviation book changes (learned here or in another process), since a short form
        may then name another concept."""
        self.finder.refresh()
        if self.finder.book.version != self._queries_version:
            self._queries.clear()
            self._queries_version = self.finder.book.version
        key = (text, None if kbs is None else tuple(sorted(kbs)))
        found = self._queries.get(key)
        if found is None:
            found = tuple(self.finder.mentions(text, kbs))
            self._queries[key] = found
            if len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return found

    def query_entities(self, text: str, kbs: KbScope) -> list[str]:
        return list(dict.fromkeys(m.concept_id for m in self.query_mentions(text, kbs)))
