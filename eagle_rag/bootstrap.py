"""``bootstrap(settings)``: build the application object graph, then start it.

There are no module-level singletons: every service gets what it needs from here. Building does
no I/O (constructors only); ``start()`` loads plugins, ``stop()`` unloads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eagle_rag.plugins.audit import AuditSink, JsonlSink, PluginAudit, RedisListSink
from eagle_rag.plugins.context import ComponentRegistries
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.manager import PluginManager
from eagle_rag.settings import Settings


@dataclass(slots=True)
class EagleApp:
    """Everything one Eagle-RAG process runs on, wired together."""

    settings: Settings
    audit: PluginAudit
    bus: HookBus
    registries: ComponentRegistries
    plugins: PluginManager

    async def start(self) -> None:
        await self.plugins.load_all()

    async def stop(self) -> None:
        self.plugins.unload_all()


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
    audit = build_audit(settings)
    bus = HookBus(audit)
    registries = ComponentRegistries()
    manager = PluginManager(settings, bus=bus, audit=audit, registries=registries)
    return EagleApp(settings, audit, bus, registries, manager)


async def bootstrap(settings: Settings) -> EagleApp:
    """Build the application and load its plugins."""
    app = build_app(settings)
    await app.start()
    return app
