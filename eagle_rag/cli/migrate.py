"""``eagle-rag migrate-store``, ``export`` and ``import``: carry a namespace between stores."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from eagle_rag.cli.common import JsonOption, app, fail
from eagle_rag.errors import EagleError
from eagle_rag.migration.copier import CopyReport


@contextmanager
def _bars(quiet: bool) -> Iterator[object]:
    """A progress callback drawing one bar per table, collection and the objects."""
    if quiet:
        yield lambda *_: None
        return
    bars: dict[str, TaskID] = {}
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:

        def update(stage: str, item: str, done: int, total: int) -> None:
            key = f"{stage}:{item}"
            if key not in bars:
                bars[key] = progress.add_task(f"{stage} {item}", total=total or None)
            progress.update(bars[key], completed=done, total=total or None)

        yield update


def _print(report: CopyReport, as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
        return
    table = Table(title=title)
    checks = {c.item: c for c in report.checks}
    # An export verifies nothing: its table is what it wrote, without empty check columns.
    columns = ("item", "copied", "source", "on target", "ok") if checks else ("item", "copied")
    for column in columns:
        table.add_column(column)
    for item in sorted(set(report.copied) | set(checks)):
        check = checks.get(item)
        cells = [item, str(report.copied.get(item, 0))]
        if check:
            ok = "yes" if check.ok else "[red]NO[/red]"
            cells += [str(check.source), str(check.target), ok]
        elif checks:
            cells += ["-", "-", "-"]
        table.add_row(*cells)
    console = Console()
    console.print(table)
    if report.sampled:
        console.print(f"{report.sampled} sampled vectors compared, {len(report.mismatched)} differ")


@app.command("migrate-store")
def migrate_store(
    to: Annotated[str, typer.Option("--to", help="Target: a profile name or a settings YAML.")],
    source: Annotated[
        str | None, typer.Option("--from", help="Source (default: the current settings).")
    ] = None,
    sample: Annotated[int, typer.Option(help="Vector rows compared per collection.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Copy this namespace's metadata, vectors (with BM25 text) and objects to other stores.

    Re-running copies only what is missing; the copy is verified at the end (exit 1 if not).
    """
    from eagle_rag.migration.copier import copy_namespace
    from eagle_rag.migration.stores import open_stores, resolve_settings

    try:
        source_settings = resolve_settings(source, os.environ)
        target_settings = resolve_settings(
            to, os.environ, namespace=source_settings.plugins.default_namespace
        )
        with (
            open_stores(source_settings, create=False) as left,
            open_stores(target_settings, create=True) as right,
            _bars(as_json) as progress,
        ):
            report = copy_namespace(left, right, progress=progress, sample=sample)  # type: ignore[arg-type]
    except EagleError as exc:
        fail(exc)
    _print(report, as_json, f"{left.namespace}: {left.description} → {right.description}")
    if not report.verified:
        raise typer.Exit(code=1)


@app.command("export")
def export(
    namespace: Annotated[str, typer.Argument(help="The namespace to export (e.g. core).")],
    file: Annotated[Path, typer.Argument(help="The archive to write (tar.gz).")],
    as_json: JsonOption = False,
) -> None:
    """Write a namespace (metadata, vectors, objects) to one file: a backup."""
    from eagle_rag.migration.archive import export_archive
    from eagle_rag.migration.stores import open_stores, resolve_settings

    try:
        settings = resolve_settings(None, os.environ, namespace=namespace)
        with open_stores(settings, create=False) as stores, _bars(as_json) as progress:
            report = export_archive(stores, file, progress=progress)  # type: ignore[arg-type]
    except EagleError as exc:
        fail(exc)
    _print(report, as_json, f"exported {namespace} to {file}")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="An archive written by `eagle-rag export`.")],
    as_json: JsonOption = False,
) -> None:
    """Restore an export into the configured stores (only what they lack is written); exit 1
    if the stores then lack anything the archive holds."""
    from eagle_rag.migration.archive import import_archive
    from eagle_rag.migration.stores import open_stores, resolve_settings

    def target(namespace: str) -> object:
        return open_stores(resolve_settings(None, os.environ, namespace=namespace), create=True)

    if not file.is_file():
        fail(f"{file} does not exist")
    try:
        with _bars(as_json) as progress:
            report = import_archive(file, target, progress=progress)  # type: ignore[arg-type]
    except EagleError as exc:
        fail(exc)
    _print(report, as_json, f"imported {file}")
    if not report.verified:  # the target lacks some of what the archive holds
        raise typer.Exit(code=1)
