"""``eagle-rag tasks list``, ``tasks show|cancel JOB_ID``: the newest ingest tasks (failed or
stuck ones, say), one task's state, and stopping it.

Like ``kb``, they go through a running server when one answers and open the embedded store
otherwise. A cancel marks the task's row; the worker running it (the server's, or a Celery
worker's) stops at its next check (a page of a scan, an embedding batch) and undoes what it
wrote.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from eagle_rag.cli.common import JsonOption, app
from eagle_rag.cli.knowledge import ServerOption, on_catalog
from eagle_rag.errors import ConflictError

tasks_app = typer.Typer(help="List, show or cancel ingest tasks.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")


@tasks_app.command("list")
def task_list(
    kb: Annotated[str | None, typer.Option("--kb", help="Only this knowledge base's.")] = None,
    status: Annotated[
        str | None, typer.Option(help="queued, processing, completed or failed.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many.")] = 100,
    as_json: JsonOption = False,
    server: ServerOption = None,
) -> None:
    """The newest ingest tasks, one a line: to find what failed or is stuck."""
    tasks = on_catalog(server, lambda catalog: catalog.list_tasks(kb, status, limit))
    if as_json:
        typer.echo(json.dumps(tasks))
        return
    for task in tasks:
        typer.echo(f"{task['kb_name']}  ", nl=False)
        _print(task, as_json=False)


@tasks_app.command("show")
def task_show(job_id: str, as_json: JsonOption = False, server: ServerOption = None) -> None:
    """Show an ingest task: status, phase, progress and error."""
    _print(on_catalog(server, lambda catalog: catalog.task(job_id)), as_json)


@tasks_app.command("cancel")
def task_cancel(job_id: str, as_json: JsonOption = False, server: ServerOption = None) -> None:
    """Cancel a queued or running ingest task (exit 1 if it already finished)."""
    cancel = on_catalog(
        server, lambda catalog: catalog.cancel_task(job_id), outcome=(ConflictError,)
    )
    _print(cancel, as_json)


def _print(task: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(task))
        return
    progress = task.get("progress") or {}
    line = f"{task['job_id']}  {task.get('filename') or '-'}  {task['status']}"
    line += f"  phase {task.get('phase', '-')}"
    if progress.get("total"):
        line += f"  {progress['current']}/{progress['total']}"
    typer.echo(line)
    if task.get("error"):
        typer.echo(f"error: {task['error']}")
