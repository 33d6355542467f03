"""``eagle-rag serve`` (API, MCP and workers in one process), ``eagle-rag mcp`` (stdio) and
``eagle-rag ask`` (a streamed answer, from a running server or the embedded store)."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from eagle_rag.cli.catalog import api_key, server_url
from eagle_rag.cli.common import app, fail, running_app, settings_from_env
from eagle_rag.errors import ConflictError, EagleError, SettingsError
from eagle_rag.launcher import ARROW_POOL_VARIABLE
from eagle_rag.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import Message, Receive, Scope, Send


def bound_settings(settings: Settings, host: str | None, port: int | None) -> Settings:
    """The settings with ``--host`` / ``--port`` applied: the app checks Host names against the
    bind address (MCP always, an open API too), so it must know the real one."""
    if port is not None and not 1 <= port <= MAX_PORT:  # the settings' own bounds
        fail(f"--port must be between 1 and {MAX_PORT}, not {port}")
    changes = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if not changes:
        return settings
    return settings.model_copy(update={"server": settings.server.model_copy(update=changes)})


MAX_PORT = 65535


def check_bindable(host: str, port: int) -> None:
    """Refuse an address this process cannot listen on, as uvicorn would bind it, before the
    start-up: a port in use was found only after the stores had opened (`[Errno 98]`, exit 3)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn's socket
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConflictError(f"port {port} on {host} is in use") from exc
            reason = exc.strerror or str(exc)
            raise SettingsError(f"cannot listen on {host!r} port {port}: {reason}") from exc


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: server.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: server.port).")] = None,
) -> None:
    """Run the REST API, SSE, MCP at /mcp and the ingest workers (embedded default)."""
    import uvicorn

    from eagle_rag.api.app import create_app
    from eagle_rag.logs import configure_logging

    settings = bound_settings(settings_from_env(), host, port)
    try:
        check_bindable(settings.server.host, settings.server.port)  # before the heavy start
    except EagleError as exc:
        fail(exc)
    configure_logging(settings)
    try:
        api = create_app(settings)
    except EagleError as exc:
        fail(exc)
    bind_host, bind_port = settings.server.host, settings.server.port
    # Through logging, so a JSON deployment's output stays one JSON object per line.
    logger = logging.getLogger("eagle_rag.serve")
    pool = arrow_pool()
    logger.info(
        "Eagle-RAG on http://%s:%s  (docs /docs, MCP /mcp, data %s, Arrow memory pool %s)",
        bind_host,
        bind_port,
        settings.data_dir,
        pool,
    )
    warning = arrow_pool_warning(pool, os.environ)
    if warning:
        logger.warning(warning)
    # log_config=None: uvicorn's records go through our handler (format, ids, redaction), and
    # the API middleware writes one access line per request, so uvicorn's own is off.
    try:
        uvicorn.run(
            StartupRefusals(api),
            host=bind_host,
            port=bind_port,
            log_level=settings.telemetry.log_level,
            log_config=None,
            access_log=False,
        )
    except SystemExit:  # uvicorn's exit 3 after a failed start
        if api.state.startup_refusal is not None:  # refused, and said why: as other commands
            raise typer.Exit(code=2) from None
        raise


class StartupRefusals:
    """The served app, reporting a start refused with an EagleError (the data dir in use by
    another server or not writable, another encoder's vectors) as its one-line reason: uvicorn
    logged Starlette's whole traceback of the lifespan (some 90 lines) for a setup mistake."""

    def __init__(self, api: FastAPI) -> None:
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.api(scope, receive, send)
            return

        async def reporting(message: Message) -> None:
            refusal = self.api.state.startup_refusal
            if message["type"] == "lifespan.startup.failed" and refusal is not None:
                message = {**message, "message": f"Eagle-RAG cannot start: {refusal}"}
            await send(message)

        await self.api(scope, receive, reporting)


def arrow_pool() -> str:
    """The allocator Arrow (and so Milvus Lite) uses in this process: ``system`` when started
    through the ``eagle-rag`` entry point (eagle_rag/launcher.py explains why)."""
    try:
        import pyarrow
    except ImportError:  # only Milvus Lite needs it; a server-only install may lack it
        return "none (pyarrow not installed)"
    return str(pyarrow.default_memory_pool().backend_name)


def arrow_pool_warning(pool: str, environ: Mapping[str, str]) -> str | None:
    """Why the pool is Arrow's mimalloc when nobody asked for it: the process did not start
    through the entry point that chooses (a console script from before it, another import)."""
    if pool != "mimalloc" or ARROW_POOL_VARIABLE in environ:
        return None
    return (
        "Arrow's memory pool is mimalloc because this process did not start through the "
        "eagle-rag entry point (reinstall an older console script, or use python -m eagle_rag): "
        "memory Milvus Lite frees stays resident; set ARROW_DEFAULT_MEMORY_POOL=system"
    )


@app.command()
def mcp() -> None:
    """Serve Core's MCP tools over stdio (for agents that launch Eagle-RAG themselves)."""
    from eagle_rag.api.security import Gatekeeper
    from eagle_rag.mcp.server import build_mcp

    logging.basicConfig(level=logging.WARNING)  # stdout belongs to the protocol

    async def run() -> None:
        async with running_app(workers=True) as application:
            server = build_mcp(application, Gatekeeper(application.settings))
            await server.run_stdio_async(show_banner=False)

    asyncio.run(run())


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    kb: Annotated[list[str] | None, typer.Option("--kb", help="Knowledge base (repeat).")] = None,
    session: Annotated[str | None, typer.Option(help="Continue a session.")] = None,
    top_n: Annotated[int | None, typer.Option("--top-n", help="Sources the model sees.")] = None,
    server: Annotated[
        str | None,
        typer.Option(help="Eagle-RAG URL (default: the configured one if it answers)."),
    ] = None,
) -> None:
    """Print a streamed, cited answer and its sources."""
    settings = settings_from_env()
    url = server_url(settings, server)
    console = Console()
    body: dict[str, Any] = {"query": question, "kb_names": kb or []}
    if session:
        body["session_id"] = session
    if top_n is not None:  # 0 is refused as out of range, not taken for the default
        body["top_n"] = top_n
    events = _remote_events(url, body, settings) if url else _local_events(body)
    done: dict[str, Any] | None = None
    for name, data in events:
        if name == "token":
            console.print(data["delta"], end="", markup=False, highlight=False)
        elif name == "error":
            console.print()
            fail(f"{data.get('code')}: {data.get('message')}")
        elif name == "done":
            done = data
    console.print()
    if done is None:
        fail("the answer stream ended without a result")
    for source in done["sources"]["text"]:
        pages = ",".join(map(str, source["page_nums"])) or "-"
        # Escaped: a file named "turbine[/dim].md" crashed the command after the answer.
        console.print(
            f"[bold]\\[{source['index']}][/bold] {escape(source['path'])}  "
            f"[dim]{escape(source['filename'])} · pages {pages} · {source['kb_name']}[/dim]"
        )
    for warning in done.get("warnings", []):
        console.print(f"[yellow]warning[/yellow] {escape(warning)}")
    console.print(f"[dim]session {done['session_id']}[/dim]")


def _remote_events(url: str, body: dict[str, Any], settings: Settings) -> Any:
    """The server's answer stream through the typed client, as the (name, data) pairs ``ask``
    prints (an error answer becomes an ``error`` pair with the server's code)."""
    from eagle_rag.client import AnswerDone, EagleClient, ErrorEvent, TokenEvent

    options = {k: body[k] for k in ("session_id", "top_n") if k in body}
    try:
        with EagleClient(url, api_key=api_key(settings)) as client:
            for event in client.query_stream(body["query"], body["kb_names"], **options):
                if isinstance(event, TokenEvent):
                    yield "token", {"delta": event.delta}
                elif isinstance(event, ErrorEvent):
                    yield "error", {"code": event.code, "message": event.message}
                elif isinstance(event, AnswerDone):
                    yield "done", dict(event.answer.raw)
    except EagleError as exc:
        yield "error", {"code": exc.fields.get("remote_code") or exc.code, "message": exc.message}


def _local_events(body: dict[str, Any]) -> Any:
    async def collect() -> list[tuple[str, dict[str, Any]]]:
        async with running_app() as application:
            request = application.answers.request(
                body["query"],
                kb_names=tuple(body["kb_names"]),
                session_id=body.get("session_id"),
                top_n=body.get("top_n"),
            )
            return [event async for event in application.answers.stream(request)]

    return asyncio.run(collect())
