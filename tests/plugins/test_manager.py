from __future__ import annotations

import types

import pytest

from eagle_rag.errors import PluginDependencyError, PluginLoadError, PluginValidationError
from eagle_rag.plugins import hooks
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import ComponentRegistries, HookContext
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.manager import CORE_MODULE, PluginManager, dependency_order
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import Settings, load_settings
from tests.plugins.sample_plugins import ModuleTable, RecordingPlugin, as_module


def _settings(data_dir: object, namespace: str, *modules: str) -> Settings:
    return load_settings(
        {"EAGLE_DATA_DIR": str(data_dir)},
        overrides={"plugins": {"enabled": list(modules), "default_namespace": namespace}},
    )


def _manager(settings: Settings, table: ModuleTable) -> tuple[PluginManager, HookBus]:
    audit = PluginAudit(ring_cap=50)
    bus = HookBus(audit)
    manager = PluginManager(
        settings, bus=bus, audit=audit, registries=ComponentRegistries(), import_module=table
    )
    return manager, bus


async def test_core_loads_first_even_when_not_listed(data_dir: object) -> None:
    log: list[str] = []
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", log)))
    manager, _ = _manager(_settings(data_dir, "dom", "dom"), table)
    loaded = await manager.load_all()
    assert [p.module for p in loaded] == [CORE_MODULE, "dom"]
    assert manager.enabled_modules() == [CORE_MODULE, "dom"]


async def test_lifecycle_order_per_plugin(data_dir: object) -> None:
    log: list[str] = []
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", log, depends_on=("core",))))
    manager, _ = _manager(_settings(data_dir, "dom", "dom"), table)
    await manager.load_all()
    assert log == [
        "dom.on_load",
        "dom.ensure_collections",
        "dom.register_hooks",
        "dom.register_mcp_tools",
    ]


async def test_duplicate_namespace_is_rejected(data_dir: object) -> None:
    log: list[str] = []
    table = ModuleTable(
        a=as_module("a", RecordingPlugin("dom", log)), b=as_module("b", RecordingPlugin("dom", log))
    )
    manager, _ = _manager(_settings(data_dir, "dom", "a", "b"), table)
    with pytest.raises(PluginLoadError, match="declared by both 'a' and 'b'"):
        await manager.load_all()
    assert log == []


async def test_g3_rejects_a_plugin_of_another_namespace(data_dir: object) -> None:
    log: list[str] = []
    table = ModuleTable(bio=as_module("bio", RecordingPlugin("biomed", log)))
    manager, _ = _manager(_settings(data_dir, "core", "bio"), table)
    with pytest.raises(PluginLoadError, match="G3") as info:
        await manager.load_all()
    assert info.value.plugin == "biomed"
    assert log == []


async def test_no_other_module_may_claim_core(data_dir: object) -> None:
    table = ModuleTable(fake=as_module("fake", RecordingPlugin("core", [])))
    manager, _ = _manager(_settings(data_dir, "core", "fake"), table)
    with pytest.raises(PluginLoadError, match=f"declared by both '{CORE_MODULE}' and 'fake'"):
        await manager.load_all()


async def test_missing_dependency_is_a_clear_error(data_dir: object) -> None:
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", [], depends_on=("chem",))))
    manager, _ = _manager(_settings(data_dir, "dom", "dom"), table)
    with pytest.raises(PluginDependencyError, match="depends on 'chem', which is not enabled"):
        await manager.load_all()


async def test_unimportable_module_is_a_load_error(data_dir: object) -> None:
    manager, _ = _manager(_settings(data_dir, "core", "no.such.module"), ModuleTable())
    with pytest.raises(PluginLoadError, match=r"cannot import plugin module 'no\.such\.module'"):
        await manager.load_all()


async def test_module_without_a_plugin_is_a_load_error(data_dir: object) -> None:
    import types

    table = ModuleTable(empty=types.ModuleType("empty"))
    manager, _ = _manager(_settings(data_dir, "core", "empty"), table)
    with pytest.raises(PluginLoadError, match="does not export `plugin`"):
        await manager.load_all()


async def test_object_missing_lifecycle_methods_is_rejected(data_dir: object) -> None:
    class Half:
        manifest = RecordingPlugin("dom", []).manifest

    table = ModuleTable(half=as_module("half", Half()))
    manager, _ = _manager(_settings(data_dir, "dom", "half"), table)
    with pytest.raises(PluginLoadError, match="on_load, ensure_collections"):
        await manager.load_all()


async def test_failure_in_lifecycle_unloads_everything(data_dir: object) -> None:
    log: list[str] = []
    table = ModuleTable(
        dom=as_module("dom", RecordingPlugin("dom", log, fail_in="ensure_collections"))
    )
    manager, bus = _manager(_settings(data_dir, "dom", "dom"), table)
    with pytest.raises(PluginLoadError) as info:
        await manager.load_all()
    assert info.value.plugin == "dom"
    assert info.value.fields["stage"] == "ensure_collections"
    assert log == ["dom.on_load", "dom.ensure_collections", "dom.on_unload"]
    assert manager.loaded == []
    assert all(not bus.subscribers(spec) for spec in hooks.CATALOG)


async def test_hooks_registered_by_plugins_are_called(data_dir: object) -> None:
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", [])))
    manager, bus = _manager(_settings(data_dir, "dom", "dom"), table)
    await manager.load_all()
    ctx = HookContext(plugin_namespace="dom")
    results = await bus.invoke_all(hooks.query_assemble, ctx=ctx, query=QueryRequest("q"))
    assert [r.source for r in results] == ["dom"]


async def test_mcp_tools_and_celery_modules_are_collected(data_dir: object) -> None:
    plugin = RecordingPlugin("dom", [], mcp_tool="lookup", celery_module="dom.tasks")
    table = ModuleTable(dom=as_module("dom", plugin), tasks=types.ModuleType("dom.tasks"))
    manager, _ = _manager(_settings(data_dir, "dom", "dom"), table)
    await manager.load_all()
    payload = manager.health_payload()
    assert payload["mcp_tools"] == ["dom_lookup"]
    assert payload["celery_modules"] == ["dom.tasks"]


async def test_a_celery_module_that_cannot_be_imported_stops_start_up(data_dir: object) -> None:
    # docs/hooks.md: a bad CELERY_TASKS name stops start-up, naming the plugin.
    plugin = RecordingPlugin("dom", [], celery_module="dom.no_such_tasks")
    manager, bus = _manager(
        _settings(data_dir, "dom", "dom"), ModuleTable(dom=as_module("dom", plugin))
    )
    with pytest.raises(PluginLoadError, match=r"'dom\.no_such_tasks' \(named by plugin dom\)"):
        await manager.load_all()
    assert manager.loaded == [] and manager.celery_modules == ()
    assert bus.subscribers(hooks.celery_tasks) == []


async def test_unload_all_reverses_order_and_clears_state(data_dir: object) -> None:
    log: list[str] = []
    plugin = RecordingPlugin("dom", log, mcp_tool="lookup")
    manager, bus = _manager(
        _settings(data_dir, "dom", "dom"), ModuleTable(dom=as_module("dom", plugin))
    )
    await manager.load_all()
    manager.unload_all()
    assert log[-1] == "dom.on_unload"
    assert manager.loaded == []
    assert manager.health_payload()["mcp_tools"] == []
    assert bus.subscribers(hooks.query_assemble) == []
    await manager.load_all()  # and it can load again
    assert [p.manifest.namespace for p in manager.loaded] == ["core", "dom"]


async def test_load_twice_without_unload_is_refused(data_dir: object) -> None:
    manager, _ = _manager(_settings(data_dir, "core"), ModuleTable())
    await manager.load_all()
    with pytest.raises(PluginLoadError, match="already loaded"):
        await manager.load_all()


async def test_health_payload_reports_manifests_hooks_and_audit(data_dir: object) -> None:
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", [])))
    manager, _ = _manager(_settings(data_dir, "dom", "dom"), table)
    await manager.load_all()
    payload = manager.health_payload()
    assert payload["default_namespace"] == "dom"
    assert [p["namespace"] for p in payload["plugins"]] == ["core", "dom"]
    assert payload["hooks"]["QUERY_ASSEMBLE"] == [
        {"plugin": "dom", "priority": 0, "namespace": None}
    ]
    assert set(payload["hooks"]) == set(hooks.BY_NAME)
    assert payload["audit_stats"]["enabled"] is True


# --- dependency order, tested on its own because G3 allows one domain plugin per instance ------


def _candidates(*specs: tuple[str, tuple[str, ...]]) -> list[tuple[str, RecordingPlugin]]:
    return [(f"mod_{ns}", RecordingPlugin(ns, [], depends_on=deps)) for ns, deps in specs]


def test_dependency_order_puts_dependencies_first_and_keeps_ties_stable() -> None:
    ordered = dependency_order(
        _candidates(("core", ()), ("c", ("b",)), ("a", ()), ("b", ("a", "core")))
    )
    assert [p.manifest.namespace for _, p in ordered] == ["core", "a", "b", "c"]


def test_dependency_cycle_is_named() -> None:
    with pytest.raises(PluginDependencyError, match="cycle: a -> b -> c -> a"):
        dependency_order(_candidates(("a", ("b",)), ("b", ("c",)), ("c", ("a",))))


def test_self_dependency_is_a_cycle() -> None:
    with pytest.raises(PluginDependencyError, match="cycle: a -> a"):
        dependency_order(
            _candidates(
                ("a", ("a",)),
            )
        )


async def test_a_module_level_instance_is_refused(data_dir: object) -> None:
    import types

    module = types.ModuleType("dom")
    module.plugin = RecordingPlugin("dom", [])  # type: ignore[attr-defined]
    manager, _ = _manager(_settings(data_dir, "dom", "dom"), ModuleTable(dom=module))
    with pytest.raises(PluginLoadError, match="is an instance; export the plugin class"):
        await manager.load_all()


async def test_each_manager_creates_its_own_plugin_instances(data_dir: object) -> None:
    first, _ = _manager(_settings(data_dir, "core"), ModuleTable())
    second, _ = _manager(_settings(data_dir, "core"), ModuleTable())
    (core_a,) = await first.load_all()
    (core_b,) = await second.load_all()
    assert core_a.plugin is not core_b.plugin
    second.unload_all()
    assert first.loaded[0].plugin is core_a.plugin


async def test_each_plugin_subscribes_under_its_own_namespace(data_dir: object) -> None:
    # RecordingPlugin names no plugin= here: the bus it is given knows who it is.
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", [])))
    manager, bus = _manager(_settings(data_dir, "dom", "dom"), table)
    await manager.load_all()
    assert [s.plugin for s in bus.subscribers(hooks.query_assemble)] == ["dom"]
    manager.unload_all()
    assert bus.subscribers(hooks.query_assemble) == []


async def test_a_plugin_may_not_subscribe_as_another(data_dir: object) -> None:
    log: list[str] = []
    table = ModuleTable(dom=as_module("dom", RecordingPlugin("dom", log, subscribe_as="core")))
    manager, bus = _manager(_settings(data_dir, "dom", "dom"), table)
    with pytest.raises(PluginValidationError, match="'dom' cannot subscribe as 'core'"):
        await manager.load_all()
    assert log[-1] == "dom.on_unload" and manager.loaded == []
    assert all(not bus.subscribers(spec) for spec in hooks.CATALOG)
