"""Core as a plugin (namespace ``core``): Eagle-RAG's own behaviour on the same hooks as domain
plugins, subscribed at CORE_PRIORITY so that any domain subscriber runs first.

On load Core registers the built-in Parser components; its subscribers route every chunk to
``eagle_text`` with the host's text encoder, embed with any registered text encoder, write
through the namespace's vector store, and route every query to ``eagle_text`` (plus
``eagle_visual`` when images are asked for). Core never routes to a specialized collection: the
scope union adds those when the documents in scope used them.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from eagle_rag import __version__
from eagle_rag.engines.bridge_guard import BridgeGuard, BridgePolicy
from eagle_rag.engines.dify import DifyEngine
from eagle_rag.engines.eagle import EagleEngine
from eagle_rag.engines.fastgpt import FastgptEngine
from eagle_rag.engines.ragflow import RagflowEngine
from eagle_rag.errors import EagleError, HookInvocationError, PluginError, describe
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.ingest import core_steps, visual_steps
from eagle_rag.ingest.detect import DOCX, IMAGE_TYPES, PDF, PPTX
from eagle_rag.ingest.knowhere.chunker import ChunkingOptions
from eagle_rag.ingest.knowhere.tree import StructureTree
from eagle_rag.ingest.parsers.registry import builtin_parsers, parser_for
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.progress import page_callback
from eagle_rag.models.core_budget import CoreBudget
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext, PluginContext
from eagle_rag.plugins.contract import CORE_NAMESPACE, CORE_PRIORITY, PluginManifest
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import (
    ClassificationDecision,
    CollectionQueryPlan,
    DocumentSource,
    EmbeddingBatch,
    EmbedRequest,
    ParseResult,
    QueryRequest,
    QueryRouteDecision,
    TextChunk,
    UpsertBatch,
    VisualChunk,
    VisualEmbedRequest,
)
from eagle_rag.plugins.registries import Registered

KNOWHERE = "knowhere"  # structure-aware text from the document's own text (no OCR)
PIXELRAG = "pixelrag"  # the same, with pages read from their pixels where they have no text
# Formats whose pages may have to be read from pixels: scanned PDFs (page by page), images, and
# Office files that are only pictures (a scan pasted into Word, a deck of screenshots).
PIXEL_TYPES = IMAGE_TYPES | {PDF, DOCX, PPTX}


class CorePlugin:
    """The domain-agnostic Core: knowhere (text) and pixelrag (text + pages read by OCR)."""

    manifest = PluginManifest(
        namespace=CORE_NAMESPACE,
        version=__version__,
        provides_pipelines=(KNOWHERE, PIXELRAG),
        description="Domain-agnostic Core: structure-aware text and visual retrieval.",
    )

    def __init__(self) -> None:
        self._ctx: PluginContext | None = None
        self.text_encoder = ""
        self.visual_encoder = ""  # "" when visual chunks are off (no encoder fits eagle_visual)
        self._ocr: OcrEngine | None = None  # the parsers' engine; its layout model finds charts

    def on_load(self, ctx: PluginContext) -> None:
        self._ctx = ctx
        # OCR takes its cores from the text embedder's budget (when it has one).
        ocr = self._ocr = OcrEngine(cores=_core_budget(ctx))
        for parser in builtin_parsers(ocr):
            ctx.register_parser(parser.name, parser)
        ingest = ctx.settings.ingest
        ctx.register_knowledge_engine(
            "eagle", EagleEngine(chunk_size=ingest.chunk_size, chunk_overlap=ingest.chunk_overlap)
        )
        # One guard for the three bridges, from this app's settings (engines.*).
        guard = BridgeGuard(BridgePolicy.from_settings(ctx.settings.engines))
        for engine in (
            DifyEngine(guard=guard),
            RagflowEngine(guard=guard),
            FastgptEngine(guard=guard),
        ):
            ctx.register_knowledge_engine(engine.name, engine)
        self.text_encoder = ctx.host.text_encoder
        self.visual_encoder = ctx.host.visual_encoder if ctx.settings.ingest.visuals else ""

    def ensure_collections(self, ctx: PluginContext) -> None:
        """Base collections are created by the vector store itself for every namespace."""

    def register_hooks(self, bus: HookBus) -> None:
        for hook, handler in (
            (hooks.ingest_route_selectors, self.route),
            (hooks.parse_document, self.parse_document),
            (hooks.build_structure, self.build_structure),
            (hooks.chunk_document, self.chunk_document),
            (hooks.ingest_visual_extract, self.extract_visuals),
            (hooks.classify_chunk, self.classify_chunk),
            (hooks.classify_visual, self.classify_visual),
            (hooks.embed_text, self.embed_text),
            (hooks.embed_visual, self.embed_visual),
            (hooks.upsert_vectors, self.upsert_vectors),
            (hooks.classify_query, self.classify_query),
        ):
            bus.subscribe(hook, handler, plugin=CORE_NAMESPACE, priority=CORE_PRIORITY)

    def on_unload(self) -> None:
        self._ctx = None

    # --- subscribers: ingest --------------------------------------------------------------------

    def route(self, source: DocumentSource) -> str:
        """PDFs, images, DOCX and PPTX go to pixelrag (each PDF page is probed: its text layer
        when it has a usable one, OCR when not; an Office file without text is read from its
        pictures); every other format to knowhere."""
        return PIXELRAG if source.mime_type in PIXEL_TYPES else KNOWHERE

    async def parse_document(
        self, source: DocumentSource, data: bytes, pipeline: str, ctx: HookContext
    ) -> ParseResult | None:
        """Parse with the registered Parser that declares the document's type; only the
        pixelrag pipeline reads pages from their pixels. Pages are reported as they finish."""
        if pipeline not in self.manifest.provides_pipelines:
            return None
        plugin = self._context()
        parsers = list(plugin.registries.parsers)
        try:
            return await core_steps.parse_document(
                source,
                data,
                [r.component for r in parsers],
                plugin.settings.ingest,
                ocr=pipeline == PIXELRAG,
                on_page=page_callback(ctx.extra),
            )
        except EagleError:
            raise  # a refused file, a cancel from the page callback: not the parser's crash
        except Exception as exc:
            owner = _parser_owner(source, data, parsers)
            if owner is None or owner.owner == CORE_NAMESPACE:
                raise
            # Core only ran it: the error names the plugin whose Parser failed.
            raise HookInvocationError(
                f"plugin {owner.owner!r} failed in hook {hooks.parse_document.name} "
                f"(its parser {owner.name!r}): {describe(exc)}",
                plugin=owner.owner,
                hook=hooks.parse_document.name,
                namespace=ctx.plugin_namespace,
                component=owner.name,
            ) from exc

    async def build_structure(
        self, parsed: ParseResult, source: DocumentSource, pipeline: str
    ) -> StructureTree | None:
        """In a thread: a long document's tree must not hold up the requests on the loop."""
        if pipeline not in self.manifest.provides_pipelines:
            return None
        return await asyncio.to_thread(core_steps.build_structure, parsed, source)

    async def chunk_document(
        self, tree: StructureTree, source: DocumentSource, options: ChunkingOptions, pipeline: str
    ) -> tuple[TextChunk, ...] | None:
        if pipeline not in self.manifest.provides_pipelines:
            return None
        encoder = self._host("encoders").get(self.text_encoder)
        return await core_steps.chunk_document(tree, source, options, encoder.count_tokens)

    async def extract_visuals(
        self,
        source: DocumentSource,
        parsed: ParseResult,
        data: bytes,
        chunks: tuple[TextChunk, ...],
        ctx: HookContext,
    ) -> tuple[VisualChunk, ...] | None:
        """PixelRAG: figures, ruled tables and page tiles, stored and anchored (off: None)."""
        if not self.visual_encoder:
            return None
        settings = self._context().settings.ingest
        layout = self._ocr.layout if self._ocr is not None else None
        words = self._ocr.words if self._ocr is not None else None
        return await visual_steps.extract_and_store(
            self._host("objects"),
            ctx.plugin_namespace,
            source,
            data,
            parsed,
            chunks,
            settings,
            layout,
            on_page=page_callback(ctx.extra),  # the pages, as progress; a cancel stops it
            ocr=words,  # the words in pictures (raster figures, Office pictures), within a budget
            cores=self._ocr.cores if self._ocr is not None else None,  # the embedder's
        )

    # --- subscribers: classify, embed, write, route queries ------------------------------------

    def classify_visual(self, visual: VisualChunk) -> tuple[ClassificationDecision, ...] | None:
        """Every visual goes to eagle_visual with the configured visual encoder."""
        if not self.visual_encoder:
            return None
        return (ClassificationDecision(VISUAL_COLLECTION, self.visual_encoder, reason="core"),)

    async def embed_visual(self, request: VisualEmbedRequest) -> EmbeddingBatch:
        """Images for an encoder that takes them; content summaries otherwise."""
        encoder = self._host("encoders").get(request.encoder)
        if getattr(encoder, "takes_images", False):
            vectors = await asyncio.to_thread(encoder.embed_images, list(request.images))
        else:
            vectors = await asyncio.to_thread(encoder.embed_passages, list(request.texts))
        return EmbeddingBatch(encoder.name, encoder.dim, vectors.tolist())

    def classify_chunk(self, chunk: TextChunk) -> tuple[ClassificationDecision, ...]:
        """Every chunk goes to eagle_text with the configured encoder (never a specialized one)."""
        return (ClassificationDecision(TEXT_COLLECTION, self.text_encoder, reason="core default"),)

    async def embed_text(self, request: EmbedRequest) -> EmbeddingBatch:
        encoder = self._host("encoders").get(request.encoder)
        embed = encoder.embed_queries if request.purpose == "query" else encoder.embed_passages
        vectors = await asyncio.to_thread(embed, list(request.texts))
        return EmbeddingBatch(encoder.name, encoder.dim, vectors.tolist())

    async def upsert_vectors(self, batch: UpsertBatch) -> UpsertBatch:
        """Write to the namespace's vector store (a domain subscriber that wrote already wins)."""
        if batch.written_ids or batch.collection not in (TEXT_COLLECTION, VISUAL_COLLECTION):
            return batch
        store = self._host("vectors")
        await asyncio.to_thread(store.upsert, batch.collection, list(batch.rows))
        return replace(batch, written_ids=tuple(str(row["id"]) for row in batch.rows))

    def classify_query(self, query: QueryRequest) -> QueryRouteDecision:
        """Text queries search eagle_text; image or hybrid requests add eagle_visual."""
        return core_route(query, self.text_encoder, self._host("encoders"))

    def _context(self) -> PluginContext:
        if self._ctx is None:
            raise PluginError("Core is not loaded", plugin=CORE_NAMESPACE)
        return self._ctx

    def _host(self, name: str) -> Any:
        service = getattr(self._ctx.host, name, None) if self._ctx else None
        if service is None:
            raise PluginError(f"Core needs the host's {name} service", plugin=CORE_NAMESPACE)
        return service


def _parser_owner(
    source: DocumentSource, data: bytes, parsers: list[Registered[Any]]
) -> Registered[Any] | None:
    """The registered Parser that Core chose for this document (None: it cannot tell)."""
    try:
        chosen = parser_for(
            source.mime_type,
            [r.component for r in parsers],
            filename=source.filename,
            data=data,
        )
    except Exception:  # a plugin's claims() may fail again: then Core cannot tell whose it was
        return None
    return next((r for r in parsers if r.component is chosen), None)


def _core_budget(ctx: PluginContext) -> CoreBudget | None:
    """The host text encoder's CoreBudget, if it is an in-process model that has one."""
    encoders = ctx.host.encoders
    if encoders is None or not ctx.host.text_encoder:
        return None
    budget = getattr(encoders.get(ctx.host.text_encoder), "core_budget", None)
    return budget if isinstance(budget, CoreBudget) else None


def core_route(query: QueryRequest, text_encoder: str, encoders: Any) -> QueryRouteDecision:
    """Core's routing, also the fallback when a CLASSIFY_QUERY subscriber degrades."""
    plans = [
        CollectionQueryPlan(
            TEXT_COLLECTION, text_encoder, query.top_k, reason="core: every query searches text"
        )
    ]
    if query.with_images or (query.with_images is None and query.mode == "hybrid"):
        why = "images were asked for" if query.with_images else "hybrid searches visuals too"
        plans.append(
            CollectionQueryPlan(
                VISUAL_COLLECTION,
                encoders.query_encoder_for(VISUAL_COLLECTION) or "",
                query.top_k,
                reason=f"core: {why}",
            )
        )
    return QueryRouteDecision(tuple(plans), classifier=CORE_NAMESPACE, reason="core default")


# The manager creates one instance per app (state belongs to the app that loaded it).
plugin = CorePlugin
