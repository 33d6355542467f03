"""``bootstrap(settings)``: build the application object graph, then start it.

There are no module-level singletons: every service gets what it needs from here. Building does
no I/O (constructors only); ``start()`` migrates the metadata schema, ensures the base vector
collections and loads the plugins; ``stop()`` undoes what start acquired.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from eagle_rag.db.database import Database
from eagle_rag.db.repositories import (
    DocumentRepository,
    KnowledgeBaseRepository,
    McpCallRepository,
    SessionRepository,
    TaskRepository,
)
from eagle_rag.index.factory import build_pool, build_vector_store
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore
from eagle_rag.plugins.audit import AuditSink, JsonlSink, PluginAudit, RedisListSink
from eagle_rag.plugins.context import ComponentRegistries
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.manager import PluginManager
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

    @classmethod
    def for_namespace(cls, db: Database, namespace: str) -> Repositories:
        return cls(
            KnowledgeBaseRepository(db, namespace),
            DocumentRepository(db, namespace),
            TaskRepository(db, namespace),
            SessionRepository(db, namespace),
            McpCallRepository(db, namespace),
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

    @property
    def namespace(self) -> str:
        return self.settings.plugins.default_namespace

    async def start(self) -> None:
        await asyncio.to_thread(self.database.migrate)
        await asyncio.to_thread(self.vectors.ensure_collections)
        await self.plugins.load_all()

    async def stop(self) -> None:
        self.plugins.unload_all()
        self.database.dispose()
        self.milvus.close()


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


def build_app(settings: Settings) -> EagleApp:
    """Wire the object graph without touching any backend."""
    namespace = settings.plugins.default_namespace
    audit = build_audit(settings)
    bus = HookBus(audit)
    registries = ComponentRegistries()
    manager = PluginManager(settings, bus=bus, audit=audit, registries=registries)
    database = Database(settings.database.url, echo=settings.database.echo)
    pool = build_pool(settings.milvus)
    return EagleApp(
        settings=settings,
        audit=audit,
        bus=bus,
        registries=registries,
        plugins=manager,
        database=database,
        repositories=Repositories.for_namespace(database, namespace),
        milvus=pool,
        vectors=build_vector_store(settings.milvus, pool, namespace),
        objects=build_object_store(settings),
    )


async def bootstrap(settings: Settings) -> EagleApp:
    """Build the application, migrate, ensure collections and load its plugins."""
    app = build_app(settings)
    await app.start()
    return app
