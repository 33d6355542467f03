"""The biomed profile against the core profile, both in one run, on the same corpus and queries.

For each dataset: two apps (core, biomed) on the embedded default, each in its own temp data
dir with the offline encoder; both ingest the same documents (ingest docs/s compared); then
every query runs on both, interleaved query by query so machine load hits both alike, as a
hybrid search of depth 100 in two forms: ``hybrid`` (rerank off, as `eagle-rag eval` scores it)
and ``default`` (the request as users send it: rerank as the instance is configured; core has
no reranker offline, so its default is its fused order, and biomed's is RERANK_MERGED).

Bars (issue 18): scifact-train biomed hybrid nDCG@10 >= 1.03 x core and >= 0.665; pubmedqa no
worse than core - 0.005; msmarco queries without entities routed as in core; query latency
<= 1.3 x core, ingest time <= 1.2 x core.

    .venv/bin/python -m benchmarks.biomed_retrieval ../shared/datasets/scifact-train \\
        ../shared/datasets/pubmedqa-dev ../shared/datasets/msmarco --docs 500 --queries 200

``--docs N`` keeps every document judged for the kept queries plus seeded random others up to
N, or a seeded sample of N judged ones when there are more (a subset is easier than the full
corpus: compare the two profiles, not absolute numbers). ``--store DIR`` keeps both ingests
and reuses them on the next run; passage vectors are shared between the two profiles unless
``--no-shared-embeddings`` (then the ingest-time ratio is measured too). ``--milvus-server``
serves each profile's store from a ``milvus-lite server`` process of its own (production's
layout: the searches leave the app's process) instead of the embedded engine inside it; Milvus
Lite's engine is Python, so embedded, every search shares the app's interpreter and cores.
``--milvus-uri PROFILE=URI`` (once per profile) points a profile at a Milvus you started, e.g.
a C++ engine (FLAT index, as embedded); each profile needs its own Milvus,
since both name their text collection ``eagle_text``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from deploy.topology import milvus_server
from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.evaluation.beir import Dataset, load_dataset
from eagle_rag.evaluation.metrics import ndcg_at, percentile, score_run
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings

PROFILES = ("core", "biomed")
DEPTH = 100


@dataclass
class ProfileRun:
    app: EagleApp
    kb: str = "bench"
    owners: dict[str, list[str]] | None = None
    ingest_s: float = 0.0


def subset(dataset: Dataset, docs: int | None, queries: int | None, seed: int = 18) -> Dataset:
    """The first ``queries`` judged queries, their judged documents, and random others."""
    kept = dict(list(dataset.queries.items())[:queries])
    qrels = {q: dataset.qrels[q] for q in kept}
    if docs is None or docs >= len(dataset.corpus):
        return replace(dataset, queries=kept, qrels=qrels)
    judged = {d for rel in qrels.values() for d in rel}
    if len(judged) > docs:  # msmarco judges ~80 passages a query: a seeded sample of them
        judged = set(random.Random(seed).sample(sorted(judged), docs))
    rest = [d for d in dataset.corpus if d.id not in judged]
    random.Random(seed).shuffle(rest)
    chosen = [d for d in dataset.corpus if d.id in judged]
    chosen += rest[: max(0, docs - len(chosen))]
    return replace(dataset, corpus=tuple(chosen), queries=kept, qrels=qrels)


async def start(profile: str, data: str, milvus_uri: str = "") -> ProfileRun:
    """``milvus_uri``: the profile's Milvus server (with the embedded store's FLAT index, so
    only where and how the searches run differs)."""
    env = {**os.environ, "EAGLE_DATA_DIR": data, "EAGLE_RAG_PROFILE": profile}
    if milvus_uri:
        env |= {"MILVUS_URI": milvus_uri, "EAGLE_RAG_MILVUS__INDEX_TYPE": "FLAT"}
    return ProfileRun(await bootstrap(load_settings(env)))


class SharedPassageVectors:
    """One passage embedding per text for both apps (same model, same text: same vector).

    The two ingests of one corpus embed the same chunks; on a loaded 2-core machine that is
    most of a full-corpus run. With sharing the second ingest reuses the first's vectors, so
    the ingest-time ratio is not measured (run with ``--no-shared-embeddings`` for it).
    Queries are never shared: each profile embeds its own, so query latency stays fair.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._vectors: dict[str, Any] = {}
        self._path = path  # kept on disk so a later process (the other profile) reuses them
        if path is not None and path.exists():
            with np.load(path) as saved:
                texts = json.loads(str(saved["texts"]))
                self._vectors = dict(zip(texts, saved["vectors"], strict=True))

    def save(self) -> None:
        if self._path is None or not self._vectors:
            return
        texts = list(self._vectors)
        vectors = np.stack([self._vectors[t] for t in texts])
        np.savez(self._path, texts=np.array(json.dumps(texts)), vectors=vectors)

    def attach(self, app: EagleApp) -> None:
        encoder = app.text_encoder
        embed = encoder.embed_passages

        def shared(texts: Sequence[str]) -> Any:
            if not texts:
                return embed(texts)
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            if missing:
                for text, vector in zip(missing, embed(missing), strict=True):
                    self._vectors[text] = vector
            return np.stack([self._vectors[t] for t in texts])

        encoder.embed_passages = shared  # type: ignore[method-assign]


def hook_timings(app: EagleApp) -> dict[str, dict[str, float]]:
    """The biomed subscribers' time per hook since the last call (then reset)."""
    for loaded in app.plugins.loaded:
        if loaded.manifest.namespace == "biomed":
            timings = loaded.plugin.runtime.timings  # type: ignore[attr-defined]
            snapshot: dict[str, dict[str, float]] = timings.snapshot()
            timings.reset()
            return snapshot
    return {}


async def ingest(run: ProfileRun, dataset: Dataset) -> None:
    app = run.app
    app.repositories.knowledge_bases.create(run.kb)
    owners: dict[str, list[str]] = {}
    started = time.perf_counter()
    for doc in dataset.corpus:
        submission = app.ingest.submit_file(
            kb_name=run.kb,
            filename=f"{doc.id}.txt",
            stream=io.BytesIO(doc.body.encode("utf-8")),
            content_type="text/plain",
        )
        owners.setdefault(submission.document_id, []).append(doc.id)
    await app.queue.join()  # type: ignore[attr-defined]
    await app.flush_vectors()
    run.ingest_s = time.perf_counter() - started
    failed = app.repositories.documents.count(kb_name=run.kb, status="failed")
    if failed:  # a corpus with holes scores the two profiles on different documents
        raise SystemExit(f"{failed} of {len(dataset.corpus)} documents failed to ingest")
    run.owners = owners


@dataclass
class Ranked:
    """One search's corpus ids, best first, and each one's rank-free plan score (ties)."""

    ids: list[str]
    ties: list[float]
    ms: float
    route: Any


async def ranked(run: ProfileRun, text: str, rerank: bool | None) -> Ranked:
    started = time.perf_counter()
    pack = await run.app.retrieval.search(
        QueryRequest(text, kb_names=(run.kb,), top_k=DEPTH, rerank=rerank)
    )
    elapsed = (time.perf_counter() - started) * 1000
    ids: dict[str, float] = {}
    for passage in pack.passages:
        for corpus_id in (run.owners or {}).get(passage.document_id, ()):
            ids.setdefault(corpus_id, round(passage.scores.get("plan_fused", passage.score), 9))
    return Ranked(list(ids), list(ids.values()), elapsed, pack.route)


async def compare(
    folder: Path,
    docs: int | None,
    queries: int | None,
    variants: Sequence[dict[str, Any]] = (),
    *,
    share_embeddings: bool = True,
    store: Path | None = None,
    ingest_only: bool = False,
    profiles: Sequence[str] = PROFILES,
    server: bool = False,
    milvus_uris: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``store``: keep both profiles' data there and reuse an ingest already completed in it
    (a full corpus ingests once; the queries then run on the code under test). ``profiles``
    (with ``ingest_only``) ingests only those, e.g. core first while biomed's code changes.
    ``server``: each profile's Milvus runs in a process of its own (``milvus-lite server`` on
    the profile's store), as in production, instead of inside the benchmark's process.
    ``milvus_uris``: a Milvus already running, by profile."""
    dataset = subset(load_dataset(folder), docs, queries)
    with tempfile.TemporaryDirectory(prefix="eagle-biomed-") as scratch, ExitStack() as servers:
        root = Path(store or scratch)
        await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
        runs = {}
        for p in profiles if ingest_only else PROFILES:
            data = root / p
            if milvus_uris and p in milvus_uris:
                runs[p] = await start(p, str(data), milvus_uris[p])
                continue
            uri = ""
            if server:
                await asyncio.to_thread(data.mkdir, exist_ok=True)
                uri, _ = servers.enter_context(milvus_server(data, data_dir=data / "milvus.db"))
            runs[p] = await start(p, str(data), uri)
        shared = SharedPassageVectors(root / "passage_vectors.npz" if store else None)
        if share_embeddings:
            for run in runs.values():
                shared.attach(run.app)
        try:
            for profile, run in runs.items():
                await ingest_once(run, dataset, root / f"{profile}.ingested.json")
                if share_embeddings:
                    await asyncio.to_thread(shared.save)
            biomed = runs.get("biomed")
            ingest_hooks = hook_timings(biomed.app) if biomed else {}
            result = {} if ingest_only else await score_both(runs, dataset, variants)
            if biomed:
                result["biomed_hook_ms"] = {
                    "ingest": ingest_hooks,
                    "query": hook_timings(biomed.app),
                }
        finally:
            for run in runs.values():
                await run.app.stop()
    result.update(dataset=folder.name, documents=len(dataset.corpus), queries=len(dataset.queries))
    result["ingest_s"] = {p: round(r.ingest_s, 2) for p, r in runs.items()}
    result["shared_embeddings"] = share_embeddings
    return result


async def ingest_once(run: ProfileRun, dataset: Dataset, marker: Path) -> None:
    """Ingest, and record it in ``marker``; a marker for the same corpus skips the ingest."""
    if await asyncio.to_thread(marker.exists):
        done = json.loads(await asyncio.to_thread(marker.read_text))
        if done["documents"] == len(dataset.corpus):
            run.owners, run.ingest_s = done["owners"], done["ingest_s"]
            return
        raise SystemExit(f"{marker} records another corpus: use a fresh --store")
    await ingest(run, dataset)
    record = {"documents": len(dataset.corpus), "ingest_s": run.ingest_s, "owners": run.owners}
    await asyncio.to_thread(marker.write_text, json.dumps(record))


async def score_both(
    runs: dict[str, ProfileRun], dataset: Dataset, variants: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """Both profiles query by query; each ``variants`` entry re-runs biomed with those
    query-time options (an ablation over one ingest), labelled ``biomed[key=value]``."""
    lists: dict[str, dict[str, list[str]]] = {}
    ties: dict[str, dict[str, list[float]]] = {}
    timings: dict[str, list[float]] = {}
    routed: set[str] = set()
    runtime = biomed_runtime(runs["biomed"].app)
    shipped = runtime.options
    for qid, text in dataset.queries.items():
        for label, run, options in passes(runs, shipped, variants):
            runtime.options = options
            for form, rerank in (("hybrid", False), ("default", None)):
                runtime.query_embeddings.clear()  # every search embeds its query: fair p50
                found = await ranked(run, text, rerank)
                lists.setdefault(f"{label}/{form}", {})[qid] = found.ids
                ties.setdefault(f"{label}/{form}", {})[qid] = found.ties
                timings.setdefault(f"{label}/{form}", []).append(found.ms)
                route = found.route
                if label == "biomed" and form == "default" and route.classifier == "biomed":
                    routed.add(qid)
        runtime.options = shipped
    qrels = dict(dataset.qrels)
    return {
        "metrics": {
            k: {m: round(v, 4) for m, v in score_run(r, qrels).items()} for k, r in lists.items()
        },
        "split_ndcg": split_ndcg(lists, qrels),
        "p50_ms": {k: round(percentile(v, 50), 2) for k, v in timings.items()},
        "paired_ratio": paired_ratio(timings),
        "biomed_routed_queries": len(routed),
        "same_top10_as_core": same_top10(lists, ties, routed),
        # per query, for looking at what a run changed (on the dev half: choose there)
        "routed": sorted(routed),
        "per_query_ndcg": {
            k: {q: round(ndcg_at(ids, qrels.get(q, {}), 10), 4) for q, ids in r.items()}
            for k, r in lists.items()
        },
    }


def paired_ratio(timings: dict[str, list[float]]) -> dict[str, float]:
    """Median over queries of biomed's time / core's for the same query, run side by side:
    steadier than a ratio of p50s when the machine's load drifts during the run. Keyed by
    form (the shipped options) and by ``label/form`` for every biomed run, variants included."""
    out = {}
    for key, times in timings.items():
        label, form = key.rsplit("/", 1)
        if label == "core":
            continue
        pairs = zip(times, timings[f"core/{form}"], strict=True)
        ratio = round(percentile([b / max(c, 1e-9) for b, c in pairs], 50), 3)
        out[key] = ratio
        if label == "biomed":
            out[form] = ratio
    return out


def same_top10(
    lists: dict[str, dict[str, list[str]]],
    ties: dict[str, dict[str, list[float]]],
    routed: set[str],
) -> dict[str, list[int]]:
    """[queries, of which biomed/hybrid's top 10 equals core/hybrid's], for the queries biomed
    routed (named entities) and for the others (which should run as in Core). Equal means the
    same ids in the same order, where hits of equal plan score (a tie, ordered by chunk ids,
    which differ between the two stores) may come in either order."""
    out = {"routed": [0, 0], "not_routed": [0, 0]}
    for qid, ids in lists["core/hybrid"].items():
        entry = out["routed" if qid in routed else "not_routed"]
        entry[0] += 1
        core = tie_runs(ids[:10], ties["core/hybrid"][qid][:10])
        other = lists["biomed/hybrid"].get(qid, [])[:10]
        entry[1] += int(core == tie_runs(other, ties["biomed/hybrid"].get(qid, [])[:10]))
    return out


def tie_runs(ids: Sequence[str], scores: Sequence[float]) -> list[tuple[float, frozenset[str]]]:
    """The ranking as runs of equal scores, each run a set."""
    runs: list[tuple[float, set[str]]] = []
    for corpus_id, score in zip(ids, scores, strict=True):
        if runs and runs[-1][0] == score:
            runs[-1][1].add(corpus_id)
        else:
            runs.append((score, {corpus_id}))
    return [(score, frozenset(members)) for score, members in runs]


def split_ndcg(
    lists: dict[str, dict[str, list[str]]], qrels: dict[str, Any]
) -> dict[str, dict[str, float]]:
    """nDCG@10 on the dev half (even positions of the kept queries: choose options there) and
    the held-out half (odd positions: report there), so a choice is never scored where made."""
    ids = list(qrels)
    halves = {"dev": ids[0::2], "held_out": ids[1::2]}
    return {
        key: {
            half: round(score_run(run, {q: qrels[q] for q in chosen})["ndcg@10"], 4)
            for half, chosen in halves.items()
        }
        for key, run in lists.items()
    }


def passes(
    runs: dict[str, ProfileRun], shipped: Any, variants: Sequence[dict[str, Any]]
) -> list[tuple[str, ProfileRun, Any]]:
    out = [("core", runs["core"], shipped), ("biomed", runs["biomed"], shipped)]
    for variant in variants:
        label = ",".join(f"{k}={v}" for k, v in variant.items())
        options = type(shipped).model_validate({**shipped.model_dump(), **variant})
        out.append((f"biomed[{label}]", runs["biomed"], options))
    return out


def biomed_runtime(app: EagleApp) -> Any:
    for loaded in app.plugins.loaded:
        if loaded.manifest.namespace == "biomed":
            return loaded.plugin.runtime  # type: ignore[attr-defined]
    raise RuntimeError("the biomed profile did not load the biomed plugin")


def summarize(result: dict[str, Any]) -> None:
    print(
        f"\n{result['dataset']}: {result['documents']} docs, {result['queries']} queries; "
        f"biomed routed {result['biomed_routed_queries']} queries to eagle_text_biomed"
    )
    same = result["same_top10_as_core"]
    print(
        "top 10 (hybrid) identical to core: "
        + "; ".join(f"{k} {v[1]} of {v[0]}" for k, v in same.items())
    )
    print(
        f"{'run':44} {'nDCG@10':>8} {'dev':>7} {'held':>7} {'R@100':>7} {'MRR@10':>7} {'p50 ms':>8}"
        f" {'paired':>7}"
    )
    for key, metrics in result["metrics"].items():
        halves = result["split_ndcg"][key]
        paired = result["paired_ratio"].get(key)
        print(
            f"{key:44} {metrics['ndcg@10']:8.4f} {halves['dev']:7.4f} {halves['held_out']:7.4f} "
            f"{metrics['recall@100']:7.4f} {metrics['mrr@10']:7.4f} {result['p50_ms'][key]:8.1f}"
            + (f" {paired:7.2f}" if paired is not None else "")
        )
    ndcg = {k: m["ndcg@10"] for k, m in result["metrics"].items()}
    p50 = result["p50_ms"]
    for form in ("hybrid", "default"):
        ratio = ndcg[f"biomed/{form}"] / max(ndcg[f"core/{form}"], 1e-9)
        latency = p50[f"biomed/{form}"] / max(p50[f"core/{form}"], 1e-9)
        paired = result["paired_ratio"][form]
        print(
            f"{form}: nDCG@10 biomed / core = {ratio:.3f}; query p50 ratio = {latency:.2f}; "
            f"median per-query time ratio = {paired:.2f}"
        )
    for phase, hooks in result.get("biomed_hook_ms", {}).items():
        parts = ", ".join(f"{h} {v['mean_ms']:.2f} ms x{int(v['calls'])}" for h, v in hooks.items())
        print(f"biomed hooks ({phase}): {parts}")
    ingest = result["ingest_s"]
    ratio = f"{ingest['biomed'] / max(ingest['core'], 1e-9):.2f}"
    if result.get("shared_embeddings"):
        ratio = "not measured (biomed reused core's passage vectors)"
    print(f"ingest seconds core {ingest['core']} / biomed {ingest['biomed']}: {ratio}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("datasets", type=Path, nargs="+")
    parser.add_argument("--docs", type=int, default=None, help="corpus subset size")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        type=json.loads,
        help="query-time biomed options to ablate, as JSON, e.g. '{\"supplement\": false}'",
    )
    parser.add_argument(
        "--no-shared-embeddings",
        action="store_true",
        help="each profile embeds its own passages (measures the ingest-time ratio)",
    )
    parser.add_argument("--store", type=Path, default=None, help="keep/reuse the ingests here")
    parser.add_argument("--ingest-only", action="store_true", help="ingest into --store, stop")
    parser.add_argument(
        "--milvus-server",
        action="store_true",
        help="run each profile's Milvus in its own process (milvus-lite server), not embedded",
    )
    parser.add_argument(
        "--milvus-uri",
        action="append",
        default=[],
        metavar="PROFILE=URI",
        help="a running Milvus for that profile (one each), e.g. core=http://127.0.0.1:19530",
    )
    parser.add_argument(
        "--profiles",
        default=",".join(PROFILES),
        help="with --ingest-only: the profiles to ingest (comma-separated)",
    )
    args = parser.parse_args(argv)
    milvus_uris = dict(pair.partition("=")[::2] for pair in args.milvus_uri)
    if any(p not in PROFILES or not uri for p, uri in milvus_uris.items()):
        # a typo must not quietly measure that profile on the embedded engine instead
        parser.error(f"--milvus-uri takes PROFILE=URI with PROFILE one of {', '.join(PROFILES)}")
    print(
        f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  machine: "
        f"{platform.machine()}, {os.cpu_count()} cores"
    )
    results = []
    for folder in args.datasets:
        result = asyncio.run(
            compare(
                folder,
                args.docs,
                args.queries,
                args.variant,
                share_embeddings=not args.no_shared_embeddings,
                store=args.store,
                ingest_only=args.ingest_only,
                profiles=tuple(args.profiles.split(",")),
                server=args.milvus_server,
                milvus_uris=milvus_uris,
            )
        )
        if args.ingest_only:
            print(json.dumps({k: result.get(k) for k in ("ingest_s", "biomed_hook_ms")}))
            continue
        summarize(result)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
