"""The Typer app every command registers on, and helpers they share."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from eagle_rag.errors import EagleError
from eagle_rag.settings import Settings, load_settings

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

app = typer.Typer(
    name="eagle-rag",
    help="Eagle-RAG: a RAG data layer for AI agents.",
    no_args_is_help=True,
    add_completion=False,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def settings_from_env() -> Settings:
    try:
        return load_settings(os.environ)
    except EagleError as exc:
        fail(exc)


def fail(exc: EagleError | str, code: int = 2) -> NoReturn:
    # Escaped: a message quoting a pattern, a path or a file name with brackets lost them to
    # Rich's markup ("must match ^{0,63}$").
    Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}")
    raise typer.Exit(code=code)


@asynccontextmanager
async def running_app(
    *, workers: bool = False, settings: Settings | None = None
) -> AsyncIterator[EagleApp]:
    """The embedded app for one command (Milvus Lite admits one process per data dir)."""
    from eagle_rag.bootstrap import bootstrap  # heavy: only commands that open stores pay it

    try:
        application = await bootstrap(settings or settings_from_env(), start_queue=workers)
    except EagleError as exc:
        fail(exc)
    try:
        yield application
    finally:
        await application.stop()
