"""Meta-tests: every hook in the catalog is documented and is exercised through the bus."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from eagle_rag.ingest.knowhere.chunker import ChunkingOptions
from eagle_rag.ingest.knowhere.tree import build_tree
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.hooks import HookMode
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

DOCS = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
SOURCE = DocumentSource("d1", "kb", "a.pdf", "application/pdf", 10, "ab")
PLAN = CollectionQueryPlan("eagle_text", "e5", 10)
HIT = RetrievedHit("c1", "eagle_text", "d1", "kb", "text", "doc/a", 0.5)
QUERY = QueryRequest("what is eagle")
CHUNK = TextChunk("c1", "d1", "kb", "text", "doc/a", 1, 0)
VISUAL = VisualChunk("v1", "d1", "kb", "img1", 1, "tile")
TREE = build_tree(ParseResult("t"), title="a")
OPTIONS = ChunkingOptions(64, 8)

# For each hook: the arguments a caller passes, and a result a subscriber returns.
SAMPLES: dict[str, tuple[dict[str, Any], Any]] = {
    "PARSE_DOCUMENT": (
        {"source": SOURCE, "data": b"%PDF", "pipeline": "knowhere"},
        ParseResult("parsed"),
    ),
    "BUILD_STRUCTURE": (
        {"parsed": ParseResult("t"), "source": SOURCE, "pipeline": "knowhere"},
        TREE,
    ),
    "CHUNK_DOCUMENT": (
        {"tree": TREE, "source": SOURCE, "options": OPTIONS, "pipeline": "knowhere"},
        (CHUNK,),
    ),
    "PARSE": ({"result": ParseResult("t"), "source": SOURCE}, ParseResult("enriched")),
    "CHUNK": ({"chunks": (CHUNK,), "source": SOURCE}, (CHUNK, CHUNK)),
    "INGEST_VISUAL_EXTRACT": (
        {"source": SOURCE, "parsed": ParseResult("t"), "data": b"%PDF", "chunks": (CHUNK,)},
        (VISUAL,),
    ),
    "CLASSIFY_CHUNK": ({"chunk": CHUNK}, (ClassificationDecision("eagle_text", "e5"),)),
    "CLASSIFY_VISUAL": ({"visual": VISUAL}, (ClassificationDecision("eagle_visual", "vl"),)),
    "EMBED_TEXT": ({"request": EmbedRequest(("a",), "e5")}, EmbeddingBatch("e5", 2, [[1, 0]])),
    "EMBED_VISUAL": (
        {"request": VisualEmbedRequest((b"png",), "vl")},
        EmbeddingBatch("vl", 2, [[0, 1]]),
    ),
    "UPSERT_VECTORS": (
        {"batch": UpsertBatch("eagle_text", ({"id": "c1"},))},
        UpsertBatch("eagle_text", ({"id": "c1"},), written_ids=("c1",)),
    ),
    "INGEST_ROUTE_SELECTORS": ({"source": SOURCE}, "pixelrag"),
    "CELERY_TASKS": ({}, ("plugins.biomed.tasks",)),
    "QUERY_ASSEMBLE": ({"query": QUERY}, QueryHints("dom", expansions=("eagle",))),
    "CLASSIFY_QUERY": (
        {"query": QUERY, "hints": ()},
        QueryRouteDecision((PLAN,), classifier="dom"),
    ),
    "QUERY_DENSE_EXPAND": ({"query": QUERY, "plan": PLAN}, QueryExpansion("eagle bird")),
    "RERANK": ({"query": QUERY, "plan": PLAN, "hits": (HIT,)}, (HIT,)),
    "RETRIEVE_SUPPLEMENT": (
        {
            "query": QUERY,
            "decision": QueryRouteDecision((PLAN,), "core"),
            "hits_by_plan": {"eagle_text": (HIT,)},
        },
        (HIT,),
    ),
    "RRF_POST_MERGE": ({"query": QUERY, "merged": (HIT,), "supplements": ()}, (HIT,)),
    "RERANK_MERGED": ({"query": QUERY, "merged": (HIT,)}, (HIT,)),
    "RETRIEVE_VISUAL_FILTER": ({"query": QUERY, "plan": PLAN}, VisualFilter(pages=(1,))),
}


def test_every_hook_has_a_sample_so_none_goes_unexercised() -> None:
    assert set(SAMPLES) == set(hooks.BY_NAME)


def test_hook_names_are_unique_and_catalog_complete() -> None:
    names = [spec.name for spec in hooks.CATALOG]
    assert len(names) == len(set(names))
    declared = {
        name.upper() for name, value in vars(hooks).items() if isinstance(value, hooks.HookSpec)
    }
    assert declared == set(names)


@pytest.mark.parametrize("spec", hooks.CATALOG, ids=lambda s: s.name)
def test_hook_is_documented(spec: hooks.HookSpec[Any]) -> None:
    assert spec.doc and len(spec.doc.splitlines()) == 1, "one-line docstring"
    docs = DOCS.read_text(encoding="utf-8")
    row = re.search(rf"^\| `{spec.name}` \| (\w+) \| (\w+) \|", docs, re.MULTILINE)
    assert row, f"{spec.name} is missing from docs/hooks.md"
    assert row.group(1) == spec.mode.value
    assert row.group(2) == spec.policy.value


@pytest.mark.parametrize("spec", hooks.CATALOG, ids=lambda s: s.name)
async def test_hook_is_exercised_through_the_bus(spec: hooks.HookSpec[Any], bus: HookBus) -> None:
    """A subscriber taking the full typed signature receives the arguments and its result counts."""
    arguments, result = SAMPLES[spec.name]
    received: dict[str, Any] = {}
    params = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in spec.params
    ]

    def subscriber(**kwargs: Any) -> Any:
        received.update(kwargs)
        return result

    subscriber.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    bus.subscribe(spec, subscriber, plugin="meta")
    ctx = HookContext(plugin_namespace="core")
    if spec.mode is HookMode.FIRST:
        out = await bus.invoke_first(spec, ctx=ctx, **arguments)
        assert out == result
    elif spec.mode is HookMode.ALL:
        assert await bus.invoke_all(spec, ctx=ctx, **arguments) == [result]
    else:
        first = spec.params[0]
        value = arguments.pop(first)
        assert await bus.invoke_transform(spec, value, ctx=ctx, **arguments) == result
        arguments[first] = value
    assert received == {**arguments, "ctx": ctx}
