"""``eagle-rag search`` and ``eagle-rag eval`` on the embedded store."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from eagle_rag.api.schemas import SearchBody
from eagle_rag.cli.catalog import REMOTE_TIMEOUT_S, api_key, server_url
from eagle_rag.cli.common import JsonOption, app, fail, running_app, settings_from_env
from eagle_rag.errors import EagleError, InvalidInputError
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.runner import MODES, EvalReport, Evaluator
from eagle_rag.retrieval.wire import search_response
from eagle_rag.settings import load_settings

SNIPPET = 160


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    kb: Annotated[
        list[str] | None, typer.Option("--kb", help="Knowledge base (repeat for several).")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Passages to return.")] = 5,
    mode: Annotated[str, typer.Option(help="dense, sparse or hybrid.")] = "hybrid",
    document: Annotated[
        list[str] | None, typer.Option("--doc", help="Only these document ids.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Only documents with a tag.")] = None,
    filters: Annotated[
        str | None, typer.Option("--filter", help="JSON filters, e.g. '{\"year\": 2021}'.")
    ] = None,
    rerank: Annotated[bool, typer.Option(help="Use the configured reranker.")] = True,
    expand: Annotated[bool, typer.Option(help="Drill section summaries down.")] = True,
    budget: Annotated[int | None, typer.Option(help="Token budget for the pack.")] = None,
    as_json: JsonOption = False,
    server: Annotated[
        str | None, typer.Option(help="Eagle-RAG URL (default: the configured one if it answers).")
    ] = None,
) -> None:
    """Search knowledge bases and print ranked passages with their paths and pages."""
    try:
        parsed = json.loads(filters) if filters else {}
    except json.JSONDecodeError as exc:
        fail(f"--filter is not JSON: {exc.msg}")
    settings = settings_from_env()
    url = server_url(settings, server)
    try:
        # The REST body's model: the same checks and options whether the search is local or not.
        body = SearchBody.checked(
            query=query,
            kb_names=kb or [],
            document_ids=document or [],
            tags=tag or [],
            filters=parsed,
            top_k=top_k,
            mode=mode,
            rerank=rerank,
            expand_parents=expand,
            token_budget=budget,
        )
        result = _remote_search(url, body, settings) if url else asyncio.run(_local_search(body))
    except EagleError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False))
        return
    _print_sources(result)


async def _local_search(body: SearchBody) -> dict[str, Any]:
    async with running_app() as application:
        return search_response(await application.retrieval.search(body.query_request()))


def _remote_search(url: str, body: SearchBody, settings: Any) -> dict[str, Any]:
    """The same search through the running server, with :mod:`eagle_rag.client`."""
    from eagle_rag.client import EagleClient

    with EagleClient(url, api_key=api_key(settings), timeout_s=REMOTE_TIMEOUT_S) as client:
        result = client.search(
            body.query,
            body.scope(),
            document_ids=body.document_ids,
            tags=body.tags,
            filters=body.filters,
            top_k=body.top_k,
            mode=body.mode,
            rerank=body.rerank,
            expand_parents=body.expand_parents,
            token_budget=body.token_budget,
        )
    return dict(result.raw)


def _print_sources(result: dict[str, Any]) -> None:
    console = Console()
    texts, images = result["sources"]["text"], result["sources"]["image"]
    if not texts and not images:
        console.print("[yellow]no passages found[/yellow]")
    for source in texts:
        _print_source(console, source, f"[{source['index']}]")
    if images:
        # Numbered on their own (from 1): under a heading, so they do not read as the passages
        # [1], [2]... again.
        console.print("[bold]images[/bold]")
        for source in images:
            _print_source(console, source, f"[image {source['index']}] {source['chunk_type']}")
    for step in result["steps"]:
        if step["status"] in ("warning", "error"):
            console.print(f"[yellow]{step['status']}[/yellow] {step['name']}: {step['detail']}")


def _print_source(console: Console, source: dict[str, Any], label: str) -> None:
    pages = ", ".join(map(str, source.get("page_nums") or [source.get("page") or "-"]))
    text = " ".join(str(source.get("content") or source.get("content_summary", "")).split())
    where = source.get("path") or source.get("parent_section") or ""
    console.print(
        f"[bold]{escape(label)}[/bold] {escape(where)}"
        f"  [dim]{escape(source['filename'])} · pages {pages} · {source['kb_name']} · "
        f"score {source['score']:.4f}[/dim]"
    )
    console.print(f"    {text[:SNIPPET]}{'…' if len(text) > SNIPPET else ''}", markup=False)


@app.command("eval")
def evaluate(
    dataset_dir: Annotated[Path, typer.Argument(help="BEIR folder: corpus, queries, qrels.")],
    modes: Annotated[
        str, typer.Option(help="Comma-separated: dense, sparse, hybrid, hybrid+rerank.")
    ] = ",".join(MODES),
    max_queries: Annotated[
        int | None, typer.Option("--max-queries", help="Evaluate the first N queries.")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", help="Depth of each search.")] = 100,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Store to use (default: a temporary one, removed)."),
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the evaluation KB.")] = False,
    files: Annotated[
        Path | None,
        typer.Option(
            "--files",
            help="A folder of files to use as the corpus (ids = file stems; relative to the "
            "dataset folder), scored at document level.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Ingest a BEIR dataset (or a folder of files) into a throw-away KB and report quality and
    speed per mode."""
    if max_queries is not None and max_queries < 1:
        fail(f"--max-queries must be at least 1, not {max_queries}")
    chosen = [m.strip() for m in modes.split(",") if m.strip()]
    unknown = sorted(set(chosen) - set(MODES))
    if unknown:
        fail(f"unknown modes: {', '.join(unknown)} (known: {', '.join(MODES)})")
    try:
        dataset = load_dataset(dataset_dir, files=files)
    except InvalidInputError as exc:
        fail(exc)

    async def run(directory: Path) -> EvalReport:
        settings = load_settings({**os.environ, "EAGLE_DATA_DIR": str(directory)})
        with _PhaseProgress(quiet=as_json) as update:
            async with running_app(workers=True, settings=settings) as application:
                evaluator = Evaluator(application, top_k=top_k, keep=keep, progress=update)
                return await evaluator.run(dataset, modes=chosen, max_queries=max_queries)

    try:
        if data_dir is not None:
            report = asyncio.run(run(data_dir))
        else:
            with tempfile.TemporaryDirectory(prefix="eagle-eval-") as scratch:
                report = asyncio.run(run(Path(scratch)))
    except EagleError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
    else:
        _print_report(report)


class _PhaseProgress:
    """A rich progress bar per phase (submit, ingest, each mode); silent for --json."""

    def __init__(self, *, quiet: bool) -> None:
        self._quiet = quiet
        self._bar = Progress(
            TextColumn("{task.description:>14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> Any:
        if not self._quiet:
            self._bar.start()
        return self.update

    def __exit__(self, *exc: object) -> None:
        if not self._quiet:
            self._bar.stop()

    def update(self, phase: str, done: int, total: int) -> None:
        if self._quiet:
            return
        if phase not in self._tasks:
            self._tasks[phase] = self._bar.add_task(phase, total=total)
        self._bar.update(self._tasks[phase], completed=done, total=total)


def _print_report(report: EvalReport) -> None:
    console = Console()
    console.print(
        f"[bold]{report.dataset}[/bold]: {report.documents} documents → {report.chunks} chunks "
        f"in {report.ingest_seconds:.1f} s ({report.ingest_docs_per_s:.1f} docs/s), "
        f"{report.failed_documents} failed; {report.queries} queries"
        f"{f' ({report.blank_queries} blank skipped)' if report.blank_queries else ''}; "
        f"encoder {report.encoder}; hybrid fusion {report.hybrid_fusion}"
    )
    table = Table("mode", "nDCG@10", "R@10", "R@100", "MRR@10", "Hit@5", "p50 ms", "p95 ms")
    for mode in report.modes:
        m = mode.metrics
        table.add_row(
            mode.mode,
            *(f"{m[k]:.4f}" for k in ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit@5")),
            f"{mode.p50_ms:.1f}",
            f"{mode.p95_ms:.1f}",
        )
    console.print(table)
    console.print(
        f"baseline (one query embedding + one dense search): p50 {report.baseline_p50_ms:.1f} ms,"
        f" p95 {report.baseline_p95_ms:.1f} ms"
    )
    if report.reranker is None:
        console.print("[dim]hybrid+rerank skipped: no reranker is configured[/dim]")
    _print_hook_timings(console, report)


def _print_hook_timings(console: Console, report: EvalReport) -> None:
    """Per-hook cost of each phase: mean ms per call of each plugin's subscriber."""
    table = Table("phase", "hook", "plugin", "calls", "mean ms", "total ms", title="hook timings")
    for phase, hooks in report.hook_ms.items():
        for key, timing in hooks.items():
            hook, plugin = key.split(" ", 1)
            table.add_row(
                phase,
                hook,
                plugin,
                str(int(timing["calls"])),
                f"{timing['mean_ms']:.2f}",
                f"{timing['total_ms']:.1f}",
            )
    if table.row_count:
        console.print(table)
