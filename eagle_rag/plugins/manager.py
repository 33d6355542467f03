"""PluginManager: import, validate, order and drive the lifecycle of the enabled plugins.

``load_all`` follows the seed exactly: Core first and always; one module per namespace; G3 (a
non-core plugin must serve the instance's namespace); topological order over ``depends_on``; then
for each plugin ``on_load -> ensure_collections -> register_hooks``; MCP tools for core and the
instance namespace only; Celery modules collected through CELERY_TASKS. A failure part way
unloads what was loaded, so a process never runs with half its plugins.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from eagle_rag.errors import EagleError, PluginDependencyError, PluginLoadError
from eagle_rag.plugins import hooks
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import (
    ComponentRegistries,
    HookContext,
    HostServices,
    PluginContext,
)
from eagle_rag.plugins.contract import (
    CORE_NAMESPACE,
    Plugin,
    PluginManifest,
    ProvidesMcpTools,
)
from eagle_rag.plugins.hookbus import HookBus

if TYPE_CHECKING:
    from eagle_rag.settings import Settings

logger = logging.getLogger(__name__)

CORE_MODULE = "eagle_rag.plugins.core_defaults"


@dataclass(frozen=True, slots=True)
class LoadedPlugin:
    """A plugin that went through its lifecycle, with the module it came from."""

    module: str
    plugin: Plugin
    context: PluginContext

    @property
    def manifest(self) -> PluginManifest:
        return self.plugin.manifest


class PluginManager:
    """Owns the enabled plugins of one application and reports on them."""

    def __init__(
        self,
        settings: Settings,
        *,
        bus: HookBus,
        audit: PluginAudit,
        registries: ComponentRegistries,
        host: HostServices | None = None,
        import_module: Callable[[str], ModuleType] = importlib.import_module,
    ) -> None:
        self._settings = settings
        self._bus = bus
        self._audit = audit
        self._registries = registries
        self._host = host or HostServices()
        self._import_module = import_module
        self._loaded: list[LoadedPlugin] = []
        self.celery_modules: tuple[str, ...] = ()

    @property
    def default_namespace(self) -> str:
        return self._settings.plugins.default_namespace

    @property
    def loaded(self) -> list[LoadedPlugin]:
        return list(self._loaded)

    def enabled_modules(self) -> list[str]:
        """The configured modules with Core forced first and duplicates dropped."""
        modules = [CORE_MODULE]
        for module in self._settings.plugins.enabled:
            if module not in modules:
                modules.append(module)
        return modules

    async def load_all(self) -> list[LoadedPlugin]:
        """Import, validate and start every enabled plugin, in dependency order."""
        if self._loaded:
            raise PluginLoadError("plugins are already loaded; call unload_all first")
        candidates = [self._import(module) for module in self.enabled_modules()]
        self._check_namespaces(candidates)
        ordered = dependency_order(candidates)
        try:
            for module, plugin in ordered:
                self._start(module, plugin)
            self._register_mcp_tools()
            self.celery_modules = await self._collect_celery_modules()
        except BaseException:
            self.unload_all()
            raise
        return self.loaded

    def unload_all(self) -> None:
        """Unload in reverse load order; an ``on_unload`` failure is logged, not raised."""
        for loaded in reversed(self._loaded):
            namespace = loaded.manifest.namespace
            self._bus.unsubscribe_plugin(namespace)
            self._registries.encoders.remove_owner(namespace)
            self._registries.parsers.remove_owner(namespace)
            self._registries.knowledge_engines.remove_owner(namespace)
            self._registries.filter_fields.remove_owner(namespace)
            self._registries.mcp_tools.remove_namespace(namespace)
            try:
                loaded.plugin.on_unload()
            except Exception as exc:
                logger.warning("plugin %s failed to unload: %s", namespace, exc)
        self._loaded = []
        self.celery_modules = ()

    # --- steps of load_all ----------------------------------------------------------------------

    def _import(self, module_name: str) -> tuple[str, Plugin]:
        try:
            module = self._import_module(module_name)
        except Exception as exc:  # an invalid manifest raises at import time too
            raise PluginLoadError(
                f"cannot import plugin module {module_name!r}: {exc}",
                module=module_name,
                stage="import",
            ) from exc
        factory = getattr(module, "plugin", None)
        if factory is None:
            raise PluginLoadError(
                f"plugin module {module_name!r} does not export `plugin`",
                module=module_name,
                stage="import",
            )
        if isinstance(factory, Plugin) and not isinstance(factory, type):
            # An instance at module level would be shared by every app in the process.
            raise PluginLoadError(
                f"`plugin` in {module_name!r} is an instance; export the plugin class (or a "
                "zero-argument factory) so that each app gets its own instance",
                module=module_name,
                stage="validate",
            )
        if not callable(factory):
            raise PluginLoadError(
                f"`plugin` in {module_name!r} must be a plugin class or a zero-argument factory",
                module=module_name,
                stage="validate",
            )
        try:
            plugin = factory()
        except Exception as exc:
            raise PluginLoadError(
                f"cannot create the plugin of {module_name!r}: {exc}",
                module=module_name,
                stage="create",
            ) from exc
        manifest = getattr(plugin, "manifest", None)
        if not isinstance(manifest, PluginManifest) or not isinstance(plugin, Plugin):
            raise PluginLoadError(
                f"`plugin` in {module_name!r} must have a PluginManifest and the methods "
                "on_load, ensure_collections, register_hooks, on_unload",
                module=module_name,
                stage="validate",
            )
        return module_name, plugin

    def _check_namespaces(self, candidates: Sequence[tuple[str, Plugin]]) -> None:
        seen: dict[str, str] = {}
        for module, plugin in candidates:
            namespace = plugin.manifest.namespace
            if namespace in seen:
                raise PluginLoadError(
                    f"namespace {namespace!r} is declared by both {seen[namespace]!r} and "
                    f"{module!r}",
                    plugin=namespace,
                    module=module,
                    stage="validate",
                )
            seen[namespace] = module
            if namespace not in (CORE_NAMESPACE, self.default_namespace):
                # G3: one instance serves one industry namespace (ADR-002).
                raise PluginLoadError(
                    f"plugin {namespace!r} ({module}) does not match this instance's "
                    f"default_namespace {self.default_namespace!r}; enable it in its own "
                    "instance (G3)",
                    plugin=namespace,
                    module=module,
                    stage="validate",
                )

    def _start(self, module: str, plugin: Plugin) -> None:
        namespace = plugin.manifest.namespace
        context = PluginContext(
            namespace=namespace,
            settings=self._settings,
            audit=self._audit,
            registries=self._registries,
            host=self._host,
            declared_tools=plugin.manifest.provides_mcp_tools,
        )
        # Appended before on_load so a failure in any step still gets this plugin unloaded.
        self._loaded.append(LoadedPlugin(module, plugin, context))
        _run_stage(namespace, module, "on_load", plugin.on_load, context)
        _run_stage(namespace, module, "ensure_collections", plugin.ensure_collections, context)
        # Its own view of the bus: it subscribes under its namespace, never under another's.
        bus = self._bus.for_plugin(namespace)
        _run_stage(namespace, module, "register_hooks", plugin.register_hooks, bus)
        logger.info("loaded plugin %s %s from %s", namespace, plugin.manifest.version, module)

    def _register_mcp_tools(self) -> None:
        allowed = {CORE_NAMESPACE, self.default_namespace}
        for loaded in self._loaded:
            if loaded.manifest.namespace not in allowed:
                continue
            if isinstance(loaded.plugin, ProvidesMcpTools):
                _run_stage(
                    loaded.manifest.namespace,
                    loaded.module,
                    "register_mcp_tools",
                    loaded.plugin.register_mcp_tools,
                    loaded.context,
                )

    async def _collect_celery_modules(self) -> tuple[str, ...]:
        """CELERY_TASKS' module names, each imported now: a bad name stops start-up here (the
        API's and the Celery worker's, which imports these modules before it consumes)."""
        ctx = HookContext(plugin_namespace=self.default_namespace)
        found: list[str] = []
        for modules in await self._bus.invoke_all(hooks.celery_tasks, ctx=ctx):
            found.extend(m for m in modules or () if m not in found)
        for module in found:
            self._import_celery_module(module, ctx)
        return tuple(found)

    def _import_celery_module(self, module: str, ctx: HookContext) -> None:
        try:
            self._import_module(module)
        except Exception as exc:
            # The bus returns names, not who gave them: name the plugins that subscribe.
            subscribers = self._bus.subscribers(hooks.celery_tasks)
            plugins = sorted({s.plugin for s in subscribers if s.applies_to(ctx)})
            raise PluginLoadError(
                f"CELERY_TASKS module {module!r} (named by plugin {', '.join(plugins)}) "
                f"cannot be imported: {exc}",
                plugin=", ".join(plugins),
                module=module,
            ) from exc

    def collection_views(self) -> dict[str, str]:
        """Every loaded plugin's view collections: view name -> the collection it mirrors."""
        return {v: b for p in self._loaded for v, b in p.manifest.collection_views.items()}

    # --- reporting ------------------------------------------------------------------------------

    def health_payload(self) -> dict[str, Any]:
        """Everything an operator needs to see what this instance runs (``/health/plugins``)."""
        limit = self._settings.telemetry.plugin_audit_health_limit
        return {
            "default_namespace": self.default_namespace,
            "enabled_modules": self.enabled_modules(),
            "plugins": [
                {"module": p.module, **p.manifest.model_dump(mode="json")} for p in self._loaded
            ],
            "specialized_collections": sorted(
                c for p in self._loaded for c in p.manifest.provides_specialized_collections
            ),
            "hooks": {
                spec.name: [
                    {"plugin": s.plugin, "priority": s.priority, "namespace": s.namespace}
                    for s in self._bus.subscribers(spec)
                ]
                for spec in hooks.CATALOG
            },
            "mcp_tools": sorted(
                t.name for t in self._registries.mcp_tools.exposed(self.default_namespace)
            ),
            "components": {
                "encoders": self._registries.encoders.names(),
                "parsers": self._registries.parsers.names(),
                "knowledge_engines": self._registries.knowledge_engines.names(),
            },
            "celery_modules": list(self.celery_modules),
            "recent_decisions": [d.to_dict() for d in self._audit.recent(limit)],
            "audit_stats": self._audit.stats(),
        }


def _run_stage(
    namespace: str, module: str, stage: str, step: Callable[..., Any], argument: Any
) -> None:
    """Run one lifecycle step; any non-Eagle exception becomes a PluginLoadError naming it."""
    try:
        step(argument)
    except EagleError:
        raise
    except Exception as exc:
        raise PluginLoadError(
            f"plugin {namespace!r} failed in {stage}: {exc}",
            plugin=namespace,
            module=module,
            stage=stage,
        ) from exc


def dependency_order(candidates: Sequence[tuple[str, Plugin]]) -> list[tuple[str, Plugin]]:
    """Dependencies before dependents; ties keep the configured order (Core is first)."""
    by_namespace = {plugin.manifest.namespace: (module, plugin) for module, plugin in candidates}
    for _module, plugin in candidates:
        for dependency in plugin.manifest.depends_on:
            if dependency not in by_namespace:
                raise PluginDependencyError(
                    f"plugin {plugin.manifest.namespace!r} depends on {dependency!r}, "
                    "which is not enabled",
                    plugin=plugin.manifest.namespace,
                    dependency=dependency,
                )
    ordered: list[tuple[str, Plugin]] = []
    state: dict[str, str] = {}  # "visiting" | "done"

    def visit(namespace: str, trail: tuple[str, ...]) -> None:
        if state.get(namespace) == "done":
            return
        if state.get(namespace) == "visiting":
            cycle = " -> ".join((*trail[trail.index(namespace) :], namespace))
            raise PluginDependencyError(
                f"plugin dependencies form a cycle: {cycle}", plugin=namespace, cycle=cycle
            )
        state[namespace] = "visiting"
        for dependency in by_namespace[namespace][1].manifest.depends_on:
            visit(dependency, (*trail, namespace))
        state[namespace] = "done"
        ordered.append(by_namespace[namespace])

    for _module, plugin in candidates:
        visit(plugin.manifest.namespace, ())
    return ordered
