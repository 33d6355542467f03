"""Real plugin objects for manager tests: they record their lifecycle calls in a shared log."""

from __future__ import annotations

import types
from typing import Any

from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import PluginContext
from eagle_rag.plugins.contract import PluginManifest
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import QueryHints


class RecordingPlugin:
    """A plugin that logs ``namespace.stage`` for each lifecycle call and can fail on demand."""

    def __init__(
        self,
        namespace: str,
        log: list[str],
        *,
        depends_on: tuple[str, ...] = (),
        fail_in: str | None = None,
        mcp_tool: str | None = None,
        celery_module: str | None = None,
        subscribe_as: str | None = None,
    ) -> None:
        self.manifest = PluginManifest(namespace=namespace, version="1.0.0", depends_on=depends_on)
        self._log = log
        self._fail_in = fail_in
        self._mcp_tool = mcp_tool
        self._celery_module = celery_module
        self._subscribe_as = subscribe_as  # a plugin= to claim; None: the view's own name

    def _step(self, stage: str) -> None:
        self._log.append(f"{self.manifest.namespace}.{stage}")
        if stage == self._fail_in:
            raise RuntimeError(f"{stage} exploded")

    def on_load(self, ctx: PluginContext) -> None:
        self._step("on_load")

    def ensure_collections(self, ctx: PluginContext) -> None:
        self._step("ensure_collections")

    def register_hooks(self, bus: HookBus) -> None:
        self._step("register_hooks")
        namespace = self.manifest.namespace
        claimed = {} if self._subscribe_as is None else {"plugin": self._subscribe_as}
        bus.subscribe(hooks.query_assemble, lambda: QueryHints(namespace), **claimed)
        if self._celery_module:
            module = self._celery_module
            bus.subscribe(hooks.celery_tasks, lambda: (module,), **claimed)

    def register_mcp_tools(self, ctx: PluginContext) -> None:
        self._step("register_mcp_tools")
        if self._mcp_tool:
            ctx.register_mcp_tool(self._mcp_tool, dict, description="a read-only tool")

    def on_unload(self) -> None:
        self._log.append(f"{self.manifest.namespace}.on_unload")


def as_module(name: str, plugin: Any) -> types.ModuleType:
    """Wrap a plugin object in a real module (exporting a factory), as if ``name`` were imported."""
    module = types.ModuleType(name)
    module.plugin = lambda: plugin  # type: ignore[attr-defined]
    return module


class ModuleTable:
    """An importer over real module objects, falling back to the real import system."""

    def __init__(self, **modules: types.ModuleType) -> None:
        self._modules = {m.__name__: m for m in modules.values()}

    def __call__(self, name: str) -> types.ModuleType:
        import importlib

        if name in self._modules:
            return self._modules[name]
        return importlib.import_module(name)
