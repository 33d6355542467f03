"""``eagle-rag doctor``, ``plugins list`` and ``version``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from eagle_rag import __version__
from eagle_rag.bootstrap import EagleApp, build_app
from eagle_rag.cli.common import JsonOption, app, fail, settings_from_env
from eagle_rag.errors import EagleError, InvalidInputError
from eagle_rag.index.milvus_pool import is_lite
from eagle_rag.plugins import hooks
from eagle_rag.probes import IN_USE_DETAIL, ProbeResult, probe_all
from eagle_rag.settings import Settings, database_backend

if TYPE_CHECKING:
    from eagle_rag.consistency import ConsistencyReport

plugins_app = typer.Typer(help="Inspect the plugins this instance loads.", no_args_is_help=True)
app.add_typer(plugins_app, name="plugins")


async def _loaded(settings: Settings) -> EagleApp:
    """The app with its plugins loaded, without migrating or creating collections: doctor and
    plugins list only look."""
    application = build_app(settings)
    await application.plugins.load_all()
    return application


@app.command()
def version() -> None:
    """Print the Eagle-RAG version."""
    typer.echo(__version__)


ConsistencyOption = Annotated[
    bool,
    typer.Option(
        "--consistency",
        help="Compare catalog rows, vectors (every collection) and stored objects instead.",
    ),
]
RepairOption = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="With --consistency: remove orphans, re-ingest documents whose vectors are off.",
    ),
]


@app.command()
def doctor(
    as_json: JsonOption = False,
    consistency: ConsistencyOption = False,
    repair: RepairOption = False,
) -> None:
    """Check settings, plugins, hooks and every configured backend; exit 1 if anything is down
    (not when Milvus Lite is in use by another process: a running server holds it).

    With --consistency: compare the namespace's stores; exit 1 if anything is out of step (with
    --repair, after repairing what can be). Stop the server first on the embedded default.
    """
    settings = settings_from_env()
    if repair and not consistency:
        fail(InvalidInputError("--repair needs --consistency"))
    missing = _missing_data_dir(settings)
    if consistency:
        _consistency(settings, repair=repair, as_json=as_json)
    probes = probe_all(settings)
    plugin_report: dict[str, Any]
    plugin_error: str | None = None
    warnings: list[str] = []
    encoders: list[dict[str, str]] = []
    try:
        application = asyncio.run(_loaded(settings))
        plugin_report = application.plugins.health_payload()
        warnings = [w for w in (application.visuals_warning,) if w]
        encoders = _encoder_rows(application)
        application.plugins.unload_all()
    except EagleError as exc:
        plugin_error = str(exc)
        plugin_report = {}
    refused = any(e["state"] == _REFUSED for e in encoders)
    # A store held by another process is not down: exit 0, with a warning saying what was not
    # checked, so doctor stays usable while `eagle-rag serve` runs.
    warnings += _in_use_warnings(probes)
    if missing is not None:
        warnings.append(
            f"the data dir {missing} did not exist: opening its stores made a new, empty "
            "installation there; if you meant another one, check EAGLE_DATA_DIR"
        )
    healthy = plugin_error is None and not refused and all(p.status != "down" for p in probes)
    if as_json:
        report = _doctor_json(settings, probes, plugin_report, plugin_error)
        typer.echo(json.dumps({**report, "encoders": encoders, "warnings": warnings}))
    else:
        _print_doctor(settings, probes, plugin_report, plugin_error, healthy, warnings, encoders)
    raise typer.Exit(code=0 if healthy else 1)


def _missing_data_dir(settings: Settings) -> str | None:
    """The data dir, when it does not exist and an embedded store (SQLite, Milvus Lite, the
    local object folder) would live in it. Opening those makes a fresh, empty installation,
    which is right on a new machine, but a mistyped EAGLE_DATA_DIR got one too and was only
    told "healthy": doctor now says so. With only servers configured the data dir holds
    nothing doctor opens."""
    directory = Path(settings.data_dir)
    embedded = (
        database_backend(settings.database.url) == "sqlite"
        or is_lite(settings.milvus.uri)
        or settings.storage.backend == "local"
    )
    return str(directory) if embedded and not directory.exists() else None


def _in_use_warnings(probes: list[ProbeResult]) -> list[str]:
    return [
        f"{p.name}: {IN_USE_DETAIL}; neither it nor its collections' encoders were checked: "
        "ask that server (GET /health), or stop it and run doctor again"
        for p in probes
        if p.status == "in_use"
    ]


_REFUSED = "another encoder's vectors: the next start refuses"
_REEMBEDS = "another encoder's vectors: the next start re-embeds every KB"


def _encoder_rows(application: EagleApp) -> list[dict[str, str]]:
    """Each existing collection's recorded encoder against the configured one, judged by the
    start-up check's rules; empty when Milvus does not answer (its probe says so)."""
    try:
        records = application.vectors.encoder_records()
    except EagleError:
        return []
    reembeds = application.settings.milvus.reembed_on_encoder_change
    conflict = _REEMBEDS if reembeds else _REFUSED
    return [
        {
            "collection": r.collection,
            "configured": r.configured,
            "recorded": r.recorded,
            "state": conflict if r.state == "conflict" else r.state,
        }
        for r in records
    ]


def _print_encoders(console: Console, encoders: list[dict[str, str]]) -> None:
    if not encoders:
        return
    table = Table("collection", "configured", "recorded", "state", title="Encoders")
    for e in encoders:
        colour = {"ok": "green", _REFUSED: "red", _REEMBEDS: "yellow"}.get(e["state"], "dim")
        state = f"[{colour}]{e['state']}[/]"
        table.add_row(e["collection"], e["configured"], e["recorded"] or "-", state)
    console.print(table)


def _consistency(settings: Settings, *, repair: bool, as_json: bool) -> None:
    from eagle_rag.cli.common import running_app
    from eagle_rag.consistency import check

    async def run() -> ConsistencyReport:
        async with running_app(settings=settings) as application:
            return await asyncio.to_thread(check, application, repair=repair)

    try:
        report = asyncio.run(run())
    except EagleError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
    else:
        _print_consistency(report)
    raise typer.Exit(code=0 if report.clean else 1)


def _print_consistency(report: ConsistencyReport) -> None:
    console = Console()
    vectors = ", ".join(f"{n} {c}" for n, c in report.vectors.items()) or "none"
    console.print(
        f"namespace [bold]{report.namespace}[/bold]: {report.documents} documents, "
        f"vectors: {vectors}, {report.objects} objects"
    )
    if report.clean:
        console.print("[green]consistent[/green]")
        return
    table = Table("finding", "document", "where", "detail", "repair", title="Inconsistencies")
    for f in report.findings:
        where = f.collection or f.key or "-"
        table.add_row(
            f.kind, f.document_id or "-", escape(where), escape(f.detail), f.repaired or "-"
        )
    console.print(table)
    console.print(f"[red]{len(report.findings)} inconsistencies[/red]")


def _doctor_json(
    settings: Settings,
    probes: list[ProbeResult],
    plugins: dict[str, Any],
    plugin_error: str | None,
) -> dict[str, Any]:
    return {
        "version": __version__,
        "settings": settings.masked(),
        "backends": [p.to_dict() for p in probes],
        "plugins": plugins,
        "plugin_error": plugin_error,
    }


def _print_doctor(
    settings: Settings,
    probes: list[ProbeResult],
    plugins: dict[str, Any],
    plugin_error: str | None,
    healthy: bool,
    warnings: list[str],
    encoders: list[dict[str, str]],
) -> None:
    console = Console()
    console.rule(f"Eagle-RAG {__version__} — profile {settings.active_profile}")
    console.print(yaml.safe_dump(settings.masked(), sort_keys=False, allow_unicode=True))

    backends = Table("backend", "status", "target", "version / detail", title="Backends")
    colours = {"ok": "green", "in_use": "yellow", "down": "red", "disabled": "dim"}
    for p in probes:
        status = f"[{colours[p.status]}]{p.status}[/]"
        backends.add_row(p.name, status, escape(p.target), escape(p.version or p.detail))
    console.print(backends)

    if plugin_error:
        console.print(f"[red]plugins failed to load:[/red] {escape(plugin_error)}")
    else:
        _print_plugins(console, plugins)
        hook_table = Table("hook", "mode", "policy", "subscribers (plugin@priority)", title="Hooks")
        for spec in hooks.CATALOG:
            subs = plugins["hooks"][spec.name]
            names = ", ".join(f"{s['plugin']}@{s['priority']}" for s in subs) or "-"
            hook_table.add_row(spec.name, spec.mode.value, spec.policy.value, names)
        console.print(hook_table)
    _print_encoders(console, encoders)
    for warning in warnings:  # a feature that is off, not a failure: the exit code stays
        console.print(f"[yellow]{escape(warning)}[/yellow]")
    console.print("[green]healthy[/green]" if healthy else "[red]unhealthy[/red]")


def _print_plugins(console: Console, plugins: dict[str, Any]) -> None:
    table = Table("namespace", "version", "module", "depends on", "collections", title="Plugins")
    for p in plugins["plugins"]:
        table.add_row(
            p["namespace"],
            p["version"],
            p["module"],
            ", ".join(p["depends_on"]) or "-",
            ", ".join(p["provides_specialized_collections"]) or "-",
        )
    console.print(table)
    console.print(f"default namespace: [bold]{plugins['default_namespace']}[/bold]")
    # Core's own tools (core_*) are registered by the MCP server as it starts, which doctor does
    # not run: "MCP tools: -" read as if /mcp served none.
    console.print(f"MCP tools of plugins: {', '.join(plugins['mcp_tools']) or '-'}")
    console.print("Core's MCP tools (core_*) are served at /mcp beside them (docs/mcp.md)")


@plugins_app.command("list")
def plugins_list(as_json: JsonOption = False) -> None:
    """List the plugins this instance loads, with their manifests."""
    settings = settings_from_env()
    try:
        application = asyncio.run(_loaded(settings))
    except EagleError as exc:
        fail(exc)
    report = application.plugins.health_payload()
    application.plugins.unload_all()
    if as_json:
        typer.echo(json.dumps(report["plugins"]))
    else:
        _print_plugins(Console(), report)
