"""``bootstrap(settings)``: build the application object graph, then start it.

There are no module-level singletons: every service gets what it needs from here, in dependency
order (runtime, knowledge bases, ingest pipeline and queue, retrieval, answers), so the graph is
frozen once built. Building does no I/O (constructors only); ``start()`` migrates the metadata
schema, ensures the base vector collections, loads the plugins and starts the in-process ingest
workers; ``stop()`` undoes it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass, fields
from pathlib import Path

from eagle_rag.db.database import Database
from eagle_rag.db.repositories.bundle import Repositories
from eagle_rag.engines.service import KnowledgeBaseService
from eagle_rag.errors import SettingsError
from eagle_rag.generation.engine import AnswerEngine
from eagle_rag.generation.factory import build_chat_model
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.index.factory import build_pool, build_vector_store
from eagle_rag.ingest.celery_app import CeleryQueue
from eagle_rag.ingest.durability import Flusher, lost_on_crash
from eagle_rag.ingest.leases import leases_for
from eagle_rag.ingest.parsers.registry import warm_in_background
from eagle_rag.ingest.pipeline import IngestPipeline
from eagle_rag.ingest.priority import warm_encoders
from eagle_rag.ingest.queue import InProcessQueue
from eagle_rag.ingest.service import IngestService, TaskQueue
from eagle_rag.models.embedders import TextEncoder
from eagle_rag.models.factory import build_text_encoder
from eagle_rag.models.rerankers import build_reranker
from eagle_rag.models.visual_encoders import SummaryEncoder, build_visual_encoder
from eagle_rag.plugins.audit import AuditSink, JsonlSink, PluginAudit, RedisListSink
from eagle_rag.plugins.context import ComponentRegistries, HostServices
from eagle_rag.plugins.encoder_registry import EncoderRegistry
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.manager import PluginManager
from eagle_rag.retrieval.service import RetrievalService
from eagle_rag.runtime import Runtime
from eagle_rag.settings import Settings
from eagle_rag.stage_metrics import StageMetrics
from eagle_rag.storage.factory import build_object_store
from eagle_rag.tracing import build_tracing

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EagleApp(Runtime):
    """Everything one Eagle-RAG process runs on: the runtime and the services built on it.

    Frozen: every service is built before the app, from the runtime and the services it uses.
    """

    knowledge: KnowledgeBaseService
    pipeline: IngestPipeline
    queue: TaskQueue
    ingest: IngestService
    retrieval: RetrievalService
    answers: AnswerEngine

    async def start(self, *, start_queue: bool = True) -> None:
        # The vector store first: a Milvus Lite data dir another server holds refuses this
        # process, which must not have migrated that server's database (another release's
        # schema) before it was refused.
        await asyncio.to_thread(self.vectors.ensure_collections)
        await asyncio.to_thread(self.database.migrate)
        logger.info("object store: %s", await asyncio.to_thread(self.objects.ensure_bucket))
        await self.plugins.load_all()
        if start_queue and isinstance(self.queue, InProcessQueue):
            if self.settings.ingest.worker_nice:  # model thread pools at the requests' priority
                encoders = [r.component for r in self.registries.encoders]
                await asyncio.to_thread(warm_encoders, encoders)
            await self.queue.start()
            if self.settings.ingest.ocr_warm:  # this process reads scans: load OCR now
                warm_in_background([r.component for r in self.registries.parsers])
        if start_queue:  # a process that serves (a Celery worker or a CLI command does not)
            await asyncio.to_thread(self._reembed_after_encoder_change)

    def _reembed_after_encoder_change(self) -> None:
        """milvus.reembed_on_encoder_change: the collections whose encoder changed (base and
        plugin ones) are refilled by running every KB of the namespace through the pipeline
        again; the new encoder is recorded once those tasks are queued (durably)."""
        changes = dict(self.vectors.encoder_changes)
        if not changes:
            return
        kbs = [kb.name for kb in self.repositories.knowledge_bases.list()]
        queued = sum(len(self.ingest.rebuild(kb)) for kb in kbs)
        for collection, encoder in changes.items():
            self.vectors.record_encoder(collection, encoder)
        logger.warning(
            "encoder changed (%s): re-embedding %d documents of %d knowledge bases",
            ", ".join(f"{c} -> {e}" for c, e in changes.items()),
            queued,
            len(kbs),
        )

    async def stop(self) -> None:
        if isinstance(self.queue, InProcessQueue):
            await self.queue.stop()
        self.plugins.unload_all()
        self.database.dispose()
        self.milvus.close()
        self.bus.tracing.shutdown()


def build_audit(settings: Settings) -> PluginAudit:
    """The audit log with the sinks the settings ask for (memory ring always)."""
    telemetry = settings.telemetry
    sinks: list[AuditSink] = [JsonlSink(Path(telemetry.plugin_audit_jsonl_path))]
    if telemetry.plugin_audit_redis_enabled:
        sinks.append(
            RedisListSink(redis_client(telemetry.redis_url), telemetry.plugin_audit_ring_cap)
        )
    return PluginAudit(
        ring_cap=telemetry.plugin_audit_ring_cap,
        sinks=sinks,
        enabled=telemetry.plugin_audit_enabled,
    )


def redis_client(url: str) -> object:
    """A Redis client with short timeouts: audit and probes must not hang the caller."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def build_encoders(
    settings: Settings, registries: ComponentRegistries
) -> tuple[EncoderRegistry, TextEncoder]:
    """The host's text encoder, registered under its name, and the base collections' dims."""
    encoder = build_text_encoder(settings.models.embedding)
    if encoder.dim != settings.milvus.text_dim:
        raise SettingsError(
            f"the text encoder {encoder.name!r} makes {encoder.dim}-d vectors but "
            f"milvus.text_dim is {settings.milvus.text_dim}; set them equal",
            encoder=encoder.name,
        )
    registries.encoders.register(encoder.name, encoder, owner="host")
    encoders = EncoderRegistry(registries.encoders)
    encoders.set_collection_dim(
        TEXT_COLLECTION,
        settings.milvus.text_dim,
        query_encoder=encoder.name,
        passage_encoder=encoder.name,
    )
    return encoders, encoder


def register_visual_encoder(
    settings: Settings,
    registries: ComponentRegistries,
    encoders: EncoderRegistry,
    text: TextEncoder,
) -> tuple[str, str]:
    """The EMBED_VISUAL encoder, registered when its dimension fits ``eagle_visual``: (its name,
    "") or ("", why visuals are off). Off, visuals are not extracted; text ingest is untouched."""
    visual = build_visual_encoder(settings.models.visual_embedding, text)
    dim = settings.milvus.visual_dim
    if int(visual.dim) != dim:
        reason = (
            f"the visual encoder {visual.name} makes {visual.dim}-d vectors but "
            f"milvus.visual_dim is {dim} (unset it to follow the encoder)"
        )
        logger.warning("visual chunks are off: %s", reason)
        encoders.set_collection_dim(VISUAL_COLLECTION, dim)
        return "", reason
    registries.encoders.register(visual.name, visual, owner="host")
    # The summary encoder's queries are the text encoder's: one name, so one query vector; and
    # its rows are summaries the text encoder embedded. A multimodal encoder's rows are pictures.
    summaries = isinstance(visual, SummaryEncoder)
    query = text.name if summaries else visual.name
    passages = text.name if summaries else None
    encoders.set_collection_dim(
        VISUAL_COLLECTION, dim, query_encoder=query, passage_encoder=passages
    )
    if not settings.ingest.visuals:
        return visual.name, "ingest.visuals is false"
    return visual.name, ""


def build_runtime(settings: Settings) -> Runtime:
    """The kernel objects and backends, wired without touching any backend."""
    namespace = settings.plugins.default_namespace
    audit = build_audit(settings)
    tracing = build_tracing(settings.telemetry.tracing)
    stage_metrics = StageMetrics()  # attached once here: every server of this app reads it
    tracing.add_observer(stage_metrics)
    audit.add_sink(stage_metrics)
    bus = HookBus(audit, tracing, query_hook_timeout_s=settings.plugins.query_hook_timeout_s)
    registries = ComponentRegistries()
    encoders, text_encoder = build_encoders(settings, registries)
    visual_encoder, visuals_off = register_visual_encoder(
        settings, registries, encoders, text_encoder
    )
    database = Database(settings.database.url, echo=settings.database.echo)
    pool = build_pool(settings.milvus)
    vectors = build_vector_store(
        settings.milvus,
        pool,
        namespace,
        text_encoder=text_encoder.name,
        visual_encoder=visual_encoder,
    )
    objects = build_object_store(settings)
    repositories = Repositories.for_namespace(database, namespace)
    host = HostServices(
        vectors=vectors,
        objects=objects,
        encoders=encoders,
        text_encoder=text_encoder.name,
        visual_encoder=visual_encoder,
        knowledge_bases=repositories.knowledge_bases,
        documents=repositories.documents,
    )
    return Runtime(
        settings=settings,
        audit=audit,
        bus=bus,
        registries=registries,
        plugins=PluginManager(settings, bus=bus, audit=audit, registries=registries, host=host),
        database=database,
        repositories=repositories,
        milvus=pool,
        vectors=vectors,
        objects=objects,
        encoders=encoders,
        text_encoder=text_encoder,
        stage_metrics=stage_metrics,
        visuals_off=visuals_off,
    )


def build_app(settings: Settings) -> EagleApp:
    """Wire the object graph without touching any backend: each service gets what it uses."""
    runtime = build_runtime(settings)
    knowledge = KnowledgeBaseService(runtime)
    chat = build_chat_model(settings.models.chat)
    pipeline = IngestPipeline(runtime, knowledge, chat)
    queue = build_queue(settings, pipeline, runtime)
    retrieval = RetrievalService(runtime, knowledge, build_reranker(settings.models.rerank))
    return EagleApp(
        **{f.name: getattr(runtime, f.name) for f in fields(Runtime)},
        knowledge=knowledge,
        pipeline=pipeline,
        queue=queue,
        ingest=IngestService(runtime, queue),
        retrieval=retrieval,
        answers=AnswerEngine(runtime, retrieval, chat),
    )


def build_queue(settings: Settings, pipeline: IngestPipeline, runtime: Runtime) -> TaskQueue:
    """Celery when configured, else in-process workers that flush vectors when idle."""
    if settings.queue.backend == "celery":
        return CeleryQueue(
            settings.queue.broker_url,
            tasks=runtime.repositories.tasks,
            send_grace_s=settings.ingest.lease_s,
        )
    return InProcessQueue(
        pipeline.run,
        workers=settings.ingest.workers,
        on_idle=Flusher(runtime),
        leases=leases_for(runtime.repositories, settings.ingest.lease_s),
        lost=functools.partial(lost_on_crash, runtime),
        nice=settings.ingest.worker_nice,
    )


async def bootstrap(settings: Settings, *, start_queue: bool = True) -> EagleApp:
    """Build the application, ensure collections, migrate, load plugins, start workers."""
    app = build_app(settings)
    try:
        await app.start(start_queue=start_queue)
    except BaseException:
        # A refused start (another encoder's vectors, a plugin that fails to load) must not
        # keep its workers, connections or the Milvus Lite file open in this process.
        try:
            await app.stop()
        except Exception:
            logger.exception("could not stop the app after its start failed")
        raise
    return app
