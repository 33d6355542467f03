"""Frozen values that cross the hook bus.

Hook signatures in :mod:`eagle_rag.plugins.hooks` are written in these types, so a plugin author
reads one module to know what a subscriber receives and must return. They are plain frozen
dataclasses: cheap to build, safe to share between subscribers, no validation magic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

RetrievalMode = Literal["dense", "sparse", "hybrid"]
EmbedPurpose = Literal["passage", "query"]


SectionKind = Literal["text", "table", "list", "code"]


@dataclass(frozen=True, slots=True)
class PageBox:
    """Where some text sits on a page: ``bbox`` is ``(x0, y0, x1, y1)`` normalised to [0, 1] with
    the origin at the page's top-left; ``start``/``end`` are the offsets into the section's
    content that the box covers (None: all of it)."""

    page: int
    bbox: tuple[float, float, float, float]
    start: int | None = None
    end: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The shared wire shape: ``{"page": 1, "bbox": [x0, y0, x1, y1]}``."""
        return {"page": self.page, "bbox": [round(v, 4) for v in self.bbox]}


@dataclass(frozen=True, slots=True)
class TextSection:
    """One block a parser found, in reading order.

    ``heading`` starts a new section at ``level`` (1 = top); a block without a heading belongs to
    the section opened before it. ``page`` is 1-based. Tables are Markdown pipe tables whose first
    row is the header, so the chunker can split them by rows and repeat that header.
    """

    content: str
    heading: str | None = None
    level: int = 0
    page: int | None = None
    kind: SectionKind = "text"
    boxes: tuple[PageBox, ...] = ()  # paged sources (PDF, image): where the content sits


@dataclass(frozen=True, slots=True)
class ParseResult:
    """A parser's output: the full text plus its sections in reading order."""

    text: str
    sections: tuple[TextSection, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentSource:
    """The document an ingest run works on, as the pipeline knows it."""

    document_id: str
    kb_name: str
    filename: str
    mime_type: str
    size: int
    sha256: str
    object_key: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A Knowhere chunk: text inside one section, located by path, pages and offsets."""

    chunk_id: str
    document_id: str
    kb_name: str
    text: str
    path: str
    level: int
    chunk_index: int
    type: str = "text"
    page_nums: tuple[int, ...] = ()
    start_offset: int | None = None
    end_offset: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VisualChunk:
    """A page tile, figure or table image with the four fusion anchors."""

    chunk_id: str
    document_id: str
    kb_name: str
    image_id: str
    page: int
    chunk_type: str
    parent_section: str = ""
    content_summary: str = ""
    source_chunk_id: str | None = None
    position: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClassificationDecision:
    """Where a chunk goes: target collection and encoder.

    Decisions that share an ``exclusive_group`` are written once: the first wins, so a
    specialized collection can replace a base one instead of duplicating the chunk.
    """

    collection: str
    encoder: str
    exclusive_group: str | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class EmbedRequest:
    """Texts to embed with a named encoder, as passages (ingest) or as queries."""

    texts: tuple[str, ...]
    encoder: str
    purpose: EmbedPurpose = "passage"


@dataclass(frozen=True, slots=True)
class VisualEmbedRequest:
    """Visuals to embed with a named visual encoder: their images (encoded bytes; empty when
    the encoder embeds summaries, so nothing is loaded for it) and their content summaries."""

    images: tuple[bytes, ...]
    encoder: str
    texts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EmbeddingBatch:
    """Vectors for an embed request, one per input, all of dimension ``dim``."""

    encoder: str
    dim: int
    vectors: Sequence[Sequence[float]]


@dataclass(frozen=True, slots=True)
class UpsertBatch:
    """Rows bound for one collection; ``written_ids`` records what a store persisted."""

    collection: str
    rows: tuple[Mapping[str, Any], ...]
    written_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """A retrieval request after edge validation: query text plus scope and mode.

    ``rerank`` and ``expand_parents`` of None take the instance's settings; ``token_budget``
    trims the context pack to that many tokens of the configured embedder.
    """

    text: str
    kb_names: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    filters: Mapping[str, Any] = field(default_factory=dict)
    top_k: int = 5
    mode: RetrievalMode = "hybrid"
    # None: the mode decides (hybrid searches images too); True: always; False: never.
    with_images: bool | None = None
    rerank: bool | None = None
    expand_parents: bool | None = None
    token_budget: int | None = None
    # Per knowledge base: settings for KBs bound to other engines, checked against the
    # engine's retrieval_schema and laid over the KB's stored retrieval_settings.
    retrieval_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueryHints:
    """What a QUERY_ASSEMBLE subscriber adds: expansions, entities, free-form hints."""

    source: str
    expansions: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CollectionQueryPlan:
    """One collection to search, with its encoder, depth and whether sparse search joins."""

    collection: str
    encoder: str
    top_k: int
    hybrid: bool = True
    filters: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    # Added to the plan's BM25 query (the dense query stays as typed): the retrieval service
    # puts QUERY_ASSEMBLE's expansions here, after routing.
    sparse_terms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueryRouteDecision:
    """The plans a query runs, and which classifier chose them and why."""

    plans: tuple[CollectionQueryPlan, ...]
    classifier: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class QueryExpansion:
    """A QUERY_DENSE_EXPAND result: a rewritten dense query and extra sparse terms."""

    dense_text: str | None = None
    sparse_terms: tuple[str, ...] = ()
    hints: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetrievedHit:
    """One retrieved record with every stage's score kept apart (never mixed raw).

    ``source_chunk_id`` is the text chunk this evidence is: a text hit's own id, or the chunk a
    visual was cut from. ``metadata`` carries the row's fields (type, page_nums, level...).
    """

    chunk_id: str
    collection: str
    document_id: str
    kb_name: str
    text: str
    path: str
    score: float
    scores: Mapping[str, float] = field(default_factory=dict)
    source_chunk_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dedupe_key(self) -> tuple[str, ...]:
        """Two hits with the same key are the same evidence (DESIGN §6)."""
        if self.source_chunk_id:
            return ("source", self.source_chunk_id)
        # A visual cut from no text chunk: one image at one place of the document.
        return ("path", self.document_id, self.path, str(self.metadata.get("image_id", "")))


@dataclass(frozen=True, slots=True)
class VisualFilter:
    """Scalar conditions that narrow a visual plan (chunk types, pages, extra fields)."""

    chunk_types: tuple[str, ...] = ()
    pages: tuple[int, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
