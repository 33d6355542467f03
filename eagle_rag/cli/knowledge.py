"""``eagle-rag kb ...`` and ``eagle-rag ingest PATH... --kb NAME``.

They go through a running server's REST API when one answers (``--server``, ``EAGLE_SERVER_URL``
or the configured address), and open the embedded store themselves otherwise (see
:mod:`eagle_rag.cli.catalog`).
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from eagle_rag.cli.catalog import Catalog, open_catalog
from eagle_rag.cli.common import JsonOption, app, fail, settings_from_env
from eagle_rag.errors import EagleError, NotFoundError

kb_app = typer.Typer(help="Create, list, show and delete knowledge bases.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")

ServerOption = Annotated[
    str | None,
    typer.Option("--server", help="Eagle-RAG URL (default: the configured one if it answers)."),
]
T = TypeVar("T")


def on_catalog(
    server: str | None,
    action: Callable[[Catalog], Awaitable[T]],
    *,
    workers: bool = False,
    outcome: tuple[type[EagleError], ...] = (),
) -> T:
    """Run ``action`` on the catalog; an error exits 2, one of ``outcome`` (the command's own
    "no", like a cancel of a finished task) exits 1."""
    settings = settings_from_env()

    async def run() -> T:
        async with open_catalog(settings, server, workers=workers) as catalog:
            return await action(catalog)

    try:
        return asyncio.run(run())
    except EagleError as exc:
        fail(exc, code=1 if isinstance(exc, outcome) else 2)


@kb_app.command("create")
def kb_create(
    name: str,
    description: Annotated[str, typer.Option(help="What the KB holds.")] = "",
    chunk_size: Annotated[int | None, typer.Option(help="Chunk size in embedder tokens.")] = None,
    chunk_overlap: Annotated[int | None, typer.Option(help="Overlap in tokens.")] = None,
    server: ServerOption = None,
) -> None:
    """Create a knowledge base."""
    creation = {
        k: v for k, v in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)) if v
    }
    on_catalog(server, lambda catalog: catalog.create_kb(name, description, creation))
    typer.echo(f"created knowledge base {name}")


@kb_app.command("list")
def kb_list(as_json: JsonOption = False, server: ServerOption = None) -> None:
    """List knowledge bases with their document counts."""
    rows = on_catalog(server, lambda catalog: catalog.list_kbs())
    if as_json:
        typer.echo(json.dumps(rows))
        return
    table = Table("kb_name", "engine", "documents", "collections", "description")
    for row in rows:
        table.add_row(
            row["kb_name"],
            row["engine"],
            str(row["documents"]),
            ", ".join(row["collections_used"]) or "-",
            escape(row["description"]),
        )
    Console().print(table)


@kb_app.command("show")
def kb_show(name: str, as_json: JsonOption = False, server: ServerOption = None) -> None:
    """Show one knowledge base and its documents."""
    info = on_catalog(server, lambda catalog: catalog.show_kb(name))
    if as_json:
        typer.echo(json.dumps(info))
        return
    console = Console()
    about = escape(info["description"])
    console.print(f"[bold]{info['kb_name']}[/bold] ({info['engine']}) — {about}")
    console.print(f"collections: {', '.join(info['collections_used']) or '-'}")
    # An id is what --doc takes: never cut to fit a narrow terminal (a file name wraps).
    widest = max((len(d["document_id"]) for d in info["document_list"]), default=11)
    table = Table(Column("document_id", no_wrap=True, min_width=widest), "filename")
    table.add_column("status")
    table.add_column("chunks")
    table.add_column("error")
    for d in info["document_list"]:
        name, error = escape(d["filename"]), escape(d["error"] or "")
        table.add_row(d["document_id"], name, d["status"], str(d["chunks"]), error)
    console.print(table)


@kb_app.command("delete")
def kb_delete(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
    server: ServerOption = None,
) -> None:
    """Delete a knowledge base with all its documents, vectors and files."""
    if not yes:
        typer.confirm(f"Delete knowledge base {name} and all its documents?", abort=True)
    removed = on_catalog(server, lambda catalog: catalog.delete_kb(name))
    typer.echo(f"deleted knowledge base {name} ({removed} documents)")


@dataclass
class _Outcome:
    path: str
    status: str
    document_id: str = ""
    chunks: int = 0
    reason: str = ""
    name: str = ""  # what the summary shows: the path relative to where the files were found


@app.command()
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files, folders or glob patterns.")],
    kb: Annotated[str, typer.Option("--kb", help="The knowledge base to ingest into.")],
    create: Annotated[bool, typer.Option("--create", help="Create the KB if missing.")] = False,
    tags: Annotated[list[str] | None, typer.Option("--tag", help="Tag every document.")] = None,
    as_json: JsonOption = False,
    server: ServerOption = None,
) -> None:
    """Ingest files into a knowledge base, with progress and a summary; exit 1 if any failed."""
    # A mistyped name must not leave the other files ingested without it: refuse first.
    unmatched = [pattern for pattern in paths if not expand_paths([pattern])]
    if unmatched:
        fail("; ".join(_unmatched(pattern) for pattern in unmatched), code=2)
    files = expand_paths(paths)

    async def run(catalog: Catalog) -> list[_Outcome]:
        # Once, before any file is read: a missing KB is one mistake, not one per file.
        if not await catalog.kb_exists(kb):
            if not create:
                raise NotFoundError(
                    f"knowledge base {kb!r} not found; add --create to create it "
                    f"(or run: eagle-rag kb create {kb})"
                )
            await catalog.create_kb(kb, "", {})
        return await _ingest_all(catalog, files, kb, tags or [], quiet=as_json)

    outcomes = on_catalog(server, run, workers=True)
    if as_json:
        typer.echo(json.dumps([o.__dict__ for o in outcomes]))
    else:
        _print_summary(outcomes)
    raise typer.Exit(code=1 if any(o.status in ("failed", "refused") for o in outcomes) else 0)


def _unmatched(pattern: str) -> str:
    if glob.has_magic(pattern):
        return f"no file matches {pattern!r}"
    if Path(pattern).is_dir():
        return f"the folder {pattern!r} holds no file (hidden files are skipped)"
    return f"no such file or folder: {pattern!r}"


def expand_paths(patterns: list[str]) -> list[Path]:
    """Files named directly, every non-hidden file under a folder, and glob matches; no repeats.

    A link under a folder, or matched by a glob, that leads out of the folder (the glob's fixed
    part, ``docs`` of ``docs/**/*.md``) is skipped: ``docs/notes.txt -> ~/.aws/credentials``
    put a secret into the knowledge base of whoever ingested ``docs``. A file or link named
    directly is the caller's choice and is read."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        # glob.glob, not Path.glob: user patterns may be absolute and contain "**".
        matches = [Path(m) for m in glob.glob(pattern, recursive=True)]  # noqa: PTH207
        matches = matches or [Path(pattern)]
        inside = _fixed_part(pattern).resolve()
        for match in matches:
            if not match.resolve().is_relative_to(inside):
                continue
            if match.is_dir():
                for child in sorted(match.rglob("*")):
                    hidden = any(part.startswith(".") for part in child.relative_to(match).parts)
                    if child.is_file() and not hidden and child.resolve().is_relative_to(inside):
                        found[child] = None
            elif match.is_file():
                found[match] = None
    return list(found)


def _fixed_part(pattern: str) -> Path:
    """The folders of a glob before its first wildcard (the whole path when it has none)."""
    parts = Path(pattern).parts
    fixed = list(itertools.takewhile(lambda part: not glob.has_magic(part), parts))
    return Path(*fixed) if fixed else Path()


async def _ingest_all(
    catalog: Catalog, files: list[Path], kb: str, tags: list[str], *, quiet: bool
) -> list[_Outcome]:
    outcomes: list[_Outcome] = []
    jobs: dict[str, _Outcome] = {}
    names = display_names(files)
    stored = document_names(files)
    for path in files:
        try:
            submission = await catalog.submit(path, kb, tags, stored[path])
        except EagleError as exc:
            outcomes.append(_Outcome(str(path), "refused", reason=exc.message, name=names[path]))
            continue
        outcome = _Outcome(str(path), "queued", submission["document_id"], name=names[path])
        if submission["dedup_hit"]:
            outcome.status = "unchanged"
        else:
            jobs[submission["job_id"]] = outcome
        outcomes.append(outcome)
    if jobs:  # nothing to follow (every file unchanged or refused): no empty 0/0 bar
        await _follow(catalog, jobs, quiet=quiet)
    for outcome in outcomes:
        if outcome.document_id and outcome.status in ("completed", "unchanged"):
            outcome.chunks = await catalog.chunk_count(outcome.document_id)
    return outcomes


async def _follow(catalog: Catalog, jobs: dict[str, _Outcome], *, quiet: bool) -> None:
    """Poll task states until every job has ended, drawing one progress bar for the batch."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, disable=quiet, transient=False) as progress:
        bar = progress.add_task(f"ingesting via {catalog.where}", total=len(jobs))
        pending = dict(jobs)
        while pending:
            for job_id in list(pending):
                task = await catalog.task(job_id)
                if task["status"] in ("completed", "failed"):
                    outcome = pending.pop(job_id)
                    outcome.status = task["status"]
                    outcome.reason = task["error"] or ""
                    progress.advance(bar)
            if pending:
                await asyncio.sleep(0.2)
    await catalog.settle()


def display_names(files: Sequence[Path]) -> dict[Path, str]:
    """Each file as a person finds it: relative to the current folder when all are inside it,
    else to the folder they all share (so ``/data/scans/*.pdf`` shows ``pn-001.pdf``, never a
    column of identical ``/data/scans/…`` prefixes)."""
    if not files:
        return {}
    absolute = {f: f.resolve() for f in files}
    here = Path.cwd().resolve()
    if all(path.is_relative_to(here) for path in absolute.values()):
        base = here
    else:
        base = Path(os.path.commonpath([path.parent for path in absolute.values()]))
    return {file: str(path.relative_to(base)) for file, path in absolute.items()}


def document_names(files: Sequence[Path]) -> dict[Path, str]:
    """The names documents are stored under: each file's path inside the folder all the files
    share, whatever the current folder, so a re-run from elsewhere replaces the same documents
    and same-named files in different folders (``*/schema.yml``) stay apart."""
    if not files:
        return {}
    absolute = {f: f.resolve() for f in files}
    base = Path(os.path.commonpath([path.parent for path in absolute.values()]))
    return {file: path.relative_to(base).as_posix() for file, path in absolute.items()}


def _print_summary(outcomes: list[_Outcome]) -> None:
    table = Table(title="Ingest summary")
    # The name may fold onto more lines but is never cut; the reason wraps.
    table.add_column("file", overflow="fold", min_width=12, ratio=2)
    table.add_column("status", no_wrap=True)
    table.add_column("chunks", no_wrap=True, justify="right")
    table.add_column("reason", overflow="fold", ratio=3)
    colours = {"completed": "green", "unchanged": "cyan", "failed": "red", "refused": "red"}
    for o in outcomes:
        colour = colours.get(o.status, "white")
        table.add_row(
            escape(o.name or o.path), f"[{colour}]{o.status}[/]", str(o.chunks), escape(o.reason)
        )
    console = Console()
    console.print(table)
    done = sum(o.status == "completed" for o in outcomes)
    unchanged = sum(o.status == "unchanged" for o in outcomes)
    chunks = sum(o.chunks for o in outcomes)
    # An unchanged file was already in the KB: it was not ingested again.
    kept = f", {unchanged} already there unchanged" if unchanged else ""
    console.print(f"{done} of {len(outcomes)} documents ingested{kept}, {chunks} chunks")
