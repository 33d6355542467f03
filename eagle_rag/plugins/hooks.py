"""The hook catalog: every extension point of the kernel, declared once.

Each hook is a function stub turned into a :class:`HookSpec` by :func:`hookspec`. Its signature is
the contract: subscribers take any subset of its parameters (by name) and return what it
returns. Its mode (how results combine) and failure policy are fixed here, not by callers.

Every spec takes ``ctx``: the bus uses it to filter subscribers by namespace.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from eagle_rag.ingest.knowhere.chunker import ChunkingOptions
from eagle_rag.ingest.knowhere.tree import StructureTree
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.payloads import (
    ClassificationDecision,
    CollectionQueryPlan,
    DocumentSource,
    EmbeddingBatch,
    EmbedRequest,
    ParseResult,
    QueryExpansion,
    QueryHints,
    QueryRequest,
    QueryRouteDecision,
    RetrievedHit,
    TextChunk,
    UpsertBatch,
    VisualChunk,
    VisualEmbedRequest,
    VisualFilter,
)

R = TypeVar("R")


class HookMode(StrEnum):
    """How the results of a hook's subscribers combine."""

    FIRST = "first"  # first non-None result by priority wins
    TRANSFORM = "transform"  # each subscriber transforms the value in turn
    ALL = "all"  # every non-None result is collected


class FailurePolicy(StrEnum):
    """What a subscriber's exception does to the call."""

    FAIL_FAST = "fail_fast"  # raise HookInvocationError naming plugin and hook
    DEGRADE = "degrade"  # skip the subscriber, audit the failure, carry on


@dataclass(frozen=True, slots=True)
class HookSpec(Generic[R]):
    """A declared hook: name, mode, failure policy, typed signature and docstring."""

    name: str
    mode: HookMode
    policy: FailurePolicy
    signature: inspect.Signature
    doc: str
    result_check: ResultCheck  # built from the signature's return annotation

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(self.signature.parameters)

    @property
    def returns(self) -> Any:
        """The declared result type (the stub's return annotation)."""
        return self.signature.return_annotation

    def accepts(self, result: Any) -> bool:
        """Whether a subscriber's result fits the declared type; ``None`` (abstain) always does.

        Checked at run time because a plugin is untyped code: a wrong value would otherwise
        fail later, in Core, blamed on the wrong step and the wrong plugin."""
        return result is None or self.result_check(result)


def hookspec(mode: HookMode, policy: FailurePolicy) -> Callable[[Callable[..., R]], HookSpec[R]]:
    """Turn a stub function into a :class:`HookSpec`; its upper-cased name is the hook name."""

    def declare(stub: Callable[..., R]) -> HookSpec[R]:
        signature = inspect.signature(stub, eval_str=True)
        if "ctx" not in signature.parameters:
            raise TypeError(f"hook {stub.__name__} must take a ctx parameter")
        doc = inspect.getdoc(stub) or ""
        if not doc:
            raise TypeError(f"hook {stub.__name__} must have a docstring")
        check = result_check(signature.return_annotation)
        return HookSpec(stub.__name__.upper(), mode, policy, signature, doc, check)

    return declare


ResultCheck = Callable[[Any], bool]


def result_check(annotation: Any) -> ResultCheck:
    """A predicate for the annotations hooks return: classes, ``X | None``, ``tuple[X, ...]``.

    Built once per hook (not per call): a list of hundreds of hits is checked per item.
    Other generics (``Mapping[K, V]``, ``list[X]``) are checked by their container only."""
    if annotation is Any or annotation is inspect.Signature.empty:
        return lambda value: True
    if annotation is None or annotation is type(None):
        return lambda value: value is None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        members = [result_check(member) for member in args]
        return lambda value: any(check(value) for check in members)
    if origin is tuple:
        return _tuple_check(args)
    kind = origin if origin is not None else annotation
    return lambda value: isinstance(value, kind)


def _tuple_check(args: tuple[Any, ...]) -> ResultCheck:
    if len(args) == 2 and args[1] is Ellipsis:
        item = args[0]
        if isinstance(item, type):  # the common case, kept to one isinstance per item
            return lambda value: (
                isinstance(value, tuple) and all(isinstance(element, item) for element in value)
            )
        check = result_check(item)
        return lambda value: isinstance(value, tuple) and all(map(check, value))
    checks = [result_check(arg) for arg in args]
    return lambda value: (
        isinstance(value, tuple)
        and len(value) == len(checks)
        and all(check(element) for check, element in zip(checks, value, strict=True))
    )


# --- ingest path: fail fast, so a half-processed document is never marked complete -------------


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def ingest_route_selectors(source: DocumentSource, ctx: HookContext) -> str | None:
    """Choose the ingest pipeline for a document (Core: pixelrag for PDFs/images/DOCX/PPTX)."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def parse_document(
    source: DocumentSource, data: bytes, pipeline: str, ctx: HookContext
) -> ParseResult | None:
    """Parse a document's bytes into a ParseResult (Core: the registered Parser of its type)."""
    raise NotImplementedError


@hookspec(HookMode.TRANSFORM, FailurePolicy.FAIL_FAST)
def parse(result: ParseResult, source: DocumentSource, ctx: HookContext) -> ParseResult:
    """Enrich a parser's ParseResult before the Knowhere structure tree is built."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def build_structure(
    parsed: ParseResult, source: DocumentSource, pipeline: str, ctx: HookContext
) -> StructureTree | None:
    """Build the document's section tree from its ParseResult (Core: the Knowhere tree)."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def chunk_document(
    tree: StructureTree,
    source: DocumentSource,
    options: ChunkingOptions,
    pipeline: str,
    ctx: HookContext,
) -> tuple[TextChunk, ...] | None:
    """Cut the section tree into text chunks (Core: Knowhere's structure-aware chunker)."""
    raise NotImplementedError


@hookspec(HookMode.TRANSFORM, FailurePolicy.FAIL_FAST)
def chunk(
    chunks: tuple[TextChunk, ...], source: DocumentSource, ctx: HookContext
) -> tuple[TextChunk, ...]:
    """Enrich Knowhere chunks with domain metadata; keep path, text and order intact."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def ingest_visual_extract(
    source: DocumentSource,
    parsed: ParseResult,
    ctx: HookContext,
    data: bytes = b"",
    chunks: tuple[TextChunk, ...] = (),
) -> tuple[VisualChunk, ...] | None:
    """Extract page tiles, figures and tables (from the original's bytes) anchored to chunks."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def classify_chunk(chunk: TextChunk, ctx: HookContext) -> tuple[ClassificationDecision, ...] | None:
    """Route a text chunk to one or more (collection, encoder) targets."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def classify_visual(
    visual: VisualChunk, ctx: HookContext
) -> tuple[ClassificationDecision, ...] | None:
    """Route a visual chunk to one or more (collection, encoder) targets."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def embed_text(request: EmbedRequest, ctx: HookContext) -> EmbeddingBatch | None:
    """Embed texts with the encoder the request names (a domain encoder may claim it)."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.FAIL_FAST)
def embed_visual(request: VisualEmbedRequest, ctx: HookContext) -> EmbeddingBatch | None:
    """Embed images with the visual encoder the request names."""
    raise NotImplementedError


@hookspec(HookMode.TRANSFORM, FailurePolicy.FAIL_FAST)
def upsert_vectors(batch: UpsertBatch, ctx: HookContext) -> UpsertBatch:
    """Persist a batch of vector rows; Core's subscriber writes them to Milvus."""
    raise NotImplementedError


@hookspec(HookMode.ALL, FailurePolicy.FAIL_FAST)
def celery_tasks(ctx: HookContext) -> tuple[str, ...] | None:
    """Name extra modules the Celery worker must import (a bad name should stop start-up)."""
    raise NotImplementedError


# --- query path: degrade, so one bad enricher costs quality, never the answer ------------------


@hookspec(HookMode.ALL, FailurePolicy.DEGRADE)
def query_assemble(query: QueryRequest, ctx: HookContext) -> QueryHints | None:
    """Add query expansions, entities or hints before routing and ANN."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.DEGRADE)
def classify_query(
    query: QueryRequest, hints: tuple[QueryHints, ...], ctx: HookContext
) -> QueryRouteDecision | None:
    """Build the QueryRouteDecision: which collections to search with which encoders."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.DEGRADE)
def query_dense_expand(
    query: QueryRequest, plan: CollectionQueryPlan, ctx: HookContext
) -> QueryExpansion | None:
    """Rewrite the dense query and add sparse terms for one plan before its ANN search."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.DEGRADE)
def rerank(
    query: QueryRequest,
    plan: CollectionQueryPlan,
    hits: tuple[RetrievedHit, ...],
    ctx: HookContext,
) -> tuple[RetrievedHit, ...] | None:
    """Rerank one plan's hits inside their own collection (Tier-1, before RRF)."""
    raise NotImplementedError


@hookspec(HookMode.ALL, FailurePolicy.DEGRADE)
def retrieve_supplement(
    query: QueryRequest,
    decision: QueryRouteDecision,
    hits_by_plan: Mapping[str, tuple[RetrievedHit, ...]],
    ctx: HookContext,
) -> tuple[RetrievedHit, ...] | None:
    """Add supplemental hits after ANN (e.g. entity-anchored lookups) as one more ranked list."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.DEGRADE)
def rrf_post_merge(
    query: QueryRequest,
    merged: tuple[RetrievedHit, ...],
    supplements: tuple[RetrievedHit, ...],
    ctx: HookContext,
) -> tuple[RetrievedHit, ...] | None:
    """Adjust the RRF-merged list, e.g. guarantee supplement hits enter the rerank pool."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.DEGRADE)
def rerank_merged(
    query: QueryRequest, merged: tuple[RetrievedHit, ...], ctx: HookContext
) -> tuple[RetrievedHit, ...] | None:
    """Rerank the merged list with a domain reranker instead of the configured one."""
    raise NotImplementedError


@hookspec(HookMode.FIRST, FailurePolicy.DEGRADE)
def retrieve_visual_filter(
    query: QueryRequest, plan: CollectionQueryPlan, ctx: HookContext
) -> VisualFilter | None:
    """Override the scalar filter of a visual plan (chunk types, pages, fields)."""
    raise NotImplementedError


CATALOG: tuple[HookSpec[Any], ...] = (
    ingest_route_selectors,
    parse_document,
    parse,
    build_structure,
    chunk_document,
    chunk,
    ingest_visual_extract,
    classify_chunk,
    classify_visual,
    embed_text,
    embed_visual,
    upsert_vectors,
    celery_tasks,
    query_assemble,
    classify_query,
    query_dense_expand,
    rerank,
    retrieve_supplement,
    rrf_post_merge,
    rerank_merged,
    retrieve_visual_filter,
)

BY_NAME: Mapping[str, HookSpec[Any]] = {spec.name: spec for spec in CATALOG}
