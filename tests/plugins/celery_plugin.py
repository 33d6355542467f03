"""A domain plugin whose CELERY_TASKS names the modules of its option ``modules``."""

from __future__ import annotations

from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import PluginContext
from eagle_rag.plugins.contract import DOMAIN_PRIORITY, PluginManifest
from eagle_rag.plugins.hookbus import HookBus

NAMESPACE = "tasks"


class CeleryTasksPlugin:
    """Names its configured task modules for the Celery worker to import."""

    manifest = PluginManifest(namespace=NAMESPACE, version="0.1.0")

    def __init__(self) -> None:
        self._modules: tuple[str, ...] = ()

    def on_load(self, ctx: PluginContext) -> None:
        self._modules = tuple(ctx.options.get("modules", ()))

    def ensure_collections(self, ctx: PluginContext) -> None:
        """No collections of its own."""

    def register_hooks(self, bus: HookBus) -> None:
        bus.subscribe(
            hooks.celery_tasks, self.task_modules, plugin=NAMESPACE, priority=DOMAIN_PRIORITY
        )

    def task_modules(self) -> tuple[str, ...]:
        return self._modules

    def on_unload(self) -> None:
        self._modules = ()


plugin = CeleryTasksPlugin
