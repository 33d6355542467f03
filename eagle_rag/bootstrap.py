"""``bootstrap(settings)``: build the application object graph, then start it.

There are no module-level singletons: every service gets what it needs from here. Building does
no I/O (constructors only); ``start()`` migrates the metadata schema, ensures the base vector
collections, loads the plugins and starts the in-process ingest workers; ``stop()`` undoes it.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from pathlib import Path

from eagle_rag.db.database import Database
from eagle_rag.db.repositories import (
    DocumentRepository,
    IngestRunRepository,
    KnowledgeBaseRepository,
    McpCallRepository,
    SessionRepository,
    TaskRepository,
)
from eagle_rag.engines.service import KnowledgeBaseService
from eagle_rag.errors import SettingsError
from eagle_rag.generation.engine import AnswerEngine
from eagle_rag.generation.factory import build_chat_model
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.index.factory import build_pool, build_vector_store
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore
from eagle_rag.ingest.celery_app import CeleryQueue
from eagle_rag.ingest.durability import Flusher, lost_on_crash
from eagle_rag.ingest.leases import leases_for
from eagle_rag.ingest.pipeline import IngestPipeline
from eagle_rag.ingest.queue import InProcessQueue
from eagle_rag.ingest.service import IngestService, TaskQueue
from eagle_rag.models.embedders import TextEncoder
from eagle_rag.models.factory import build_text_encoder
from eagle_rag.models.rerankers import build_reranker
from eagle_rag.plugins.audit import AuditSink, JsonlSink, PluginAudit, RedisListSink
from eagle_rag.plugins.context import ComponentRegistries, HostServices
from eagle_rag.plugins.encoder_registry import EncoderRegistry
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.manager import PluginManager
from eagle_rag.retrieval.service import RetrievalService
from eagle_rag.settings import Settings
from eagle_rag.storage.base import ObjectStore
from eagle_rag.storage.factory import build_object_store


@dataclass(frozen=True, slots=True)
class Repositories:
    """The metadata repositories of the instance namespace."""

    knowledge_bases: KnowledgeBaseRepository
    documents: DocumentRepository
    tasks: TaskRepository
    sessions: SessionRepository
    mcp_calls: McpCallRepository
    ingest_runs: IngestRunRepository

    @classmethod
    def for_namespace(cls, db: Database, namespace: str) -> Repositories:
        return cls(
            KnowledgeBaseRepository(db, namespace),
            DocumentRepository(db, namespace),
            TaskRepository(db, namespace),
            SessionRepository(db, namespace),
            McpCallRepository(db, namespace),
            IngestRunRepository(db, namespace),
        )


@dataclass(slots=True)
class EagleApp:
    """Everything one Eagle-RAG process runs on, wired together."""

    settings: Settings
    audit: PluginAudit
    bus: HookBus
    registries: ComponentRegistries
    plugins: PluginManager
    database: Database
    repositories: Repositories
    milvus: MilvusClientPool
    vectors: MilvusVectorStore
    objects: ObjectStore
    encoders: EncoderRegistry
    text_encoder: TextEncoder
    # Set by build_app right after construction: the queue's pipeline needs the app itself.
    queue: TaskQueue = field(init=False)
    ingest: IngestService = field(init=False)
    retrieval: RetrievalService = field(init=False)
    answers: AnswerEngine = field(init=False)
    knowledge: KnowledgeBaseService = field(init=False)

    @property
    def namespace(self) -> str:
        return self.settings.plugins.default_namespace

    @property
    def text_encoder_name(self) -> str:
        return self.text_encoder.name

    async def start(self, *, start_queue: bool = True) -> None:
        await asyncio.to_thread(self.database.migrate)
        await asyncio.to_thread(self.vectors.ensure_collections)
        await self.plugins.load_all()
        if start_queue and isinstance(self.queue, InProcessQueue):
            await self.queue.start()

    async def stop(self) -> None:
        if isinstance(self.queue, InProcessQueue):
            await self.queue.stop()
        self.plugins.unload_all()
        self.database.dispose()
        self.milvus.close()

    async def flush_vectors(self) -> None:
        await asyncio.to_thread(self.vectors.flush)


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
        TEXT_COLLECTION, settings.milvus.text_dim, query_encoder=encoder.name
    )
    encoders.set_collection_dim(VISUAL_COLLECTION, settings.milvus.visual_dim)
    return encoders, encoder


def build_app(settings: Settings) -> EagleApp:
    """Wire the object graph without touching any backend."""
    namespace = settings.plugins.default_namespace
    audit = build_audit(settings)
    bus = HookBus(audit)
    registries = ComponentRegistries()
    encoders, text_encoder = build_encoders(settings, registries)
    database = Database(settings.database.url, echo=settings.database.echo)
    pool = build_pool(settings.milvus)
    vectors = build_vector_store(settings.milvus, pool, namespace)
    objects = build_object_store(settings)
    host = HostServices(
        vectors=vectors, objects=objects, encoders=encoders, text_encoder=text_encoder.name
    )
    manager = PluginManager(settings, bus=bus, audit=audit, registries=registries, host=host)
    app = EagleApp(
        settings=settings,
        audit=audit,
        bus=bus,
        registries=registries,
        plugins=manager,
        database=database,
        repositories=Repositories.for_namespace(database, namespace),
        milvus=pool,
        vectors=vectors,
        objects=objects,
        encoders=encoders,
        text_encoder=text_encoder,
    )
    app.queue = build_queue(app)
    app.ingest = IngestService(app, app.queue)
    app.retrieval = RetrievalService(app, build_reranker(settings.models.rerank))
    app.answers = AnswerEngine(app, build_chat_model(settings.models.chat))
    app.knowledge = KnowledgeBaseService(app)
    return app


def build_queue(app: EagleApp) -> TaskQueue:
    if app.settings.queue.backend == "celery":
        return CeleryQueue(app.settings.queue.broker_url)
    pipeline = IngestPipeline(app)
    return InProcessQueue(
        pipeline.run,
        workers=app.settings.ingest.workers,
        on_idle=Flusher(app),
        leases=leases_for(app.repositories, app.settings.ingest.lease_s),
        lost=functools.partial(lost_on_crash, app),
    )


async def bootstrap(settings: Settings, *, start_queue: bool = True) -> EagleApp:
    """Build the application, migrate, ensure collections, load plugins, start workers."""
    app = build_app(settings)
    await app.start(start_queue=start_queue)
    return app
