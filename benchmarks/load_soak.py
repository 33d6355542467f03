"""Load soak: N concurrent clients mixing ``/search``, ``/query`` and uploads for a duration.

A real ``eagle-rag serve`` process on a temp data dir, seeded with documents; then ``--clients``
threads, each with its own HTTP client, pick an operation by weight (search, query, upload) and
send it back to back until ``--duration`` seconds have passed. Meanwhile the server's RSS is
sampled. Figures are ratios against baselines of the same run: ``/search`` p95 against its own
p50, and the RSS at the end against the RSS after the first minute (the warm-up's end).
Issue 14's bar: 8 clients for 10 minutes, zero 5xx, p95 /search <= 3 x p50, end RSS within 10%.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python -m benchmarks.load_soak --clients 8 --duration 600
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.crash_recovery import WORDS, free_port, marker, serve, server_env
from benchmarks.upload_memory import rss_bytes

KB = "soak"
MIB = 1024 * 1024
REQUEST_TIMEOUT_S = 60.0
RSS_EVERY_S = 5.0
# A niced server on a loaded machine can take minutes to start (models, Milvus Lite).
STARTUP_S = 600.0


@dataclass
class Sample:
    op: str
    status: int  # 0: no HTTP answer (timeout, connection reset)
    ms: float
    at_s: float  # since the load began


@dataclass
class Soak:
    """What every client recorded, and the server's RSS over time."""

    samples: list[Sample] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)  # every accepted upload's task
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, sample: Sample) -> None:
        with self.lock:
            self.samples.append(sample)

    def accepted(self, job_id: str) -> None:
        with self.lock:
            self.jobs.append(job_id)


def text_for(rng: random.Random, word: str) -> str:
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(50)) + "." for _ in range(6)]
    paragraphs[3] += f" The code word is {word}."
    return "# Soak report\n\n" + "\n\n".join(paragraphs)


def upload(client: httpx.Client, rng: random.Random) -> httpx.Response:
    word = marker(rng)
    files = {"file": (f"{word}.md", text_for(rng, word).encode(), "text/markdown")}
    return client.post("/ingest", data={"kb_name": KB}, files=files)


def operation(client: httpx.Client, op: str, rng: random.Random) -> httpx.Response:
    query = " ".join(rng.sample(WORDS, 3))
    if op == "search":
        return client.post("/search", json={"query": query, "kb_name": KB, "top_k": 5})
    if op == "query":
        return client.post("/query", json={"query": query, "kb_name": KB, "top_k": 5})
    return upload(client, rng)


def timed(client: httpx.Client, op: str, rng: random.Random) -> tuple[int, float, Any]:
    """(status, milliseconds, JSON body or None) of one operation; status 0: no answer."""
    started = time.monotonic()
    try:
        answer = operation(client, op, rng)
    except httpx.HTTPError:
        return 0, (time.monotonic() - started) * 1000, None
    ms = (time.monotonic() - started) * 1000
    return answer.status_code, ms, answer.json() if op == "upload" else None


def client_loop(
    url: str,
    seed: int,
    options: tuple[dict[str, int], int],
    window: tuple[float, float],
    soak: Soak,
) -> None:
    """One client: operations back to back inside ``window`` (monotonic began, until).

    ``options`` is (weights, keep): with keep > 0 the client deletes its oldest upload once it
    has more than ``keep`` (a bounded corpus with churn, as a service at steady state sees);
    0 lets the corpus grow.
    """
    weights, keep = options
    rng = random.Random(seed)
    ops, cumulative = list(weights), list(weights.values())
    began, until = window
    mine: deque[str] = deque()
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT_S) as client:
        while time.monotonic() < until:
            op = rng.choices(ops, weights=cumulative)[0]
            at = time.monotonic() - began
            status, ms, body = timed(client, op, rng)
            soak.add(Sample(op, status, ms, at))
            if body and status == 202:
                mine.append(str(body["document_id"]))
                soak.accepted(str(body["job_id"]))
            if keep and len(mine) > keep:
                at = time.monotonic() - began
                status, ms = delete(client, mine.popleft())
                soak.add(Sample("delete", status, ms, at))


def delete(client: httpx.Client, document_id: str) -> tuple[int, float]:
    started = time.monotonic()
    try:
        status = client.delete(f"/documents/{document_id}").status_code
    except httpx.HTTPError:
        status = 0
    return status, (time.monotonic() - started) * 1000


def sample_rss(pid: int, began: float, until: float, soak: Soak) -> None:
    while time.monotonic() < until:
        soak.rss.append((time.monotonic() - began, rss_bytes(pid)))
        time.sleep(RSS_EVERY_S)
    soak.rss.append((time.monotonic() - began, rss_bytes(pid)))


def seed(client: httpx.Client, documents: int, rng: random.Random) -> None:
    if client.post("/knowledge_bases", json={"kb_name": KB}).status_code != 201:
        raise RuntimeError("could not create the soak knowledge base")
    jobs = [upload(client, rng).json()["job_id"] for _ in range(documents)]
    wait_tasks(client, jobs, timeout=600)


def wait_tasks(client: httpx.Client, jobs: list[str], timeout: float) -> Counter[str]:
    deadline = time.monotonic() + timeout
    statuses: Counter[str] = Counter()
    for job in jobs:
        while True:
            answer = client.get(f"/tasks/{job}")
            status = "gone" if answer.status_code == 404 else answer.json()["status"]
            if status in ("completed", "failed", "gone") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        statuses[status] += 1
    return statuses


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(samples: list[Sample]) -> dict[str, Any]:
    ms = [s.ms for s in samples]
    p50 = percentile(ms, 0.50)
    return {
        "count": len(ms),
        "p50_ms": round(p50, 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "p99_ms": round(percentile(ms, 0.99), 1),
        "mean_ms": round(statistics.fmean(ms), 1) if ms else 0.0,
        "p95_over_p50": round(percentile(ms, 0.95) / p50, 2) if p50 else 0.0,
    }


def by_minute(samples: list[Sample]) -> list[dict[str, Any]]:
    """p50 and p95 per minute of load: a tail that drifts up with the corpus reads differently
    from one made of spikes (the whole run's p95/p50 cannot tell them apart)."""
    minutes: dict[int, list[Sample]] = {}
    for sample in samples:
        minutes.setdefault(int(sample.at_s // 60), []).append(sample)
    return [
        {"minute": m, **{k: v for k, v in latency(s).items() if k != "mean_ms"}}
        for m, s in sorted(minutes.items())
    ]


def rss_after(rss: list[tuple[float, int]], at_s: float) -> int:
    """The first RSS sample taken at or after ``at_s`` (the last one if the run was shorter)."""
    return next((value for t, value in rss if t >= at_s), rss[-1][1])


def report(soak: Soak, warmup_s: float, tasks: Counter[str]) -> dict[str, Any]:
    ops = ("search", "query", "upload", "delete")
    by_op = {op: [s for s in soak.samples if s.op == op] for op in ops}
    statuses = Counter(str(s.status) for s in soak.samples)
    server_errors = sum(n for code, n in statuses.items() if code.startswith("5"))
    no_answer = statuses.get("0", 0)
    rss_first = rss_after(soak.rss, warmup_s)
    rss_end = soak.rss[-1][1]
    search = latency(by_op["search"])
    result = {
        "requests": len(soak.samples),
        "statuses": dict(statuses),
        "server_errors_5xx": server_errors,
        "no_answer": no_answer,
        "latency": {op: latency(samples) for op, samples in by_op.items()},
        "search_by_minute": by_minute(by_op["search"]),
        "uploaded_tasks": dict(tasks),
        "rss_after_warmup_mib": round(rss_first / MIB, 1),
        "rss_end_mib": round(rss_end / MIB, 1),
        "rss_end_over_warmup": round(rss_end / rss_first, 3),
        "rss_peak_mib": round(max(v for _, v in soak.rss) / MIB, 1),
    }
    result["bars"] = {
        "zero_5xx": server_errors == 0 and no_answer == 0,
        "search_p95_le_3x_p50": 0 < search["p95_over_p50"] <= 3.0,
        "rss_within_10pct": abs(result["rss_end_over_warmup"] - 1.0) <= 0.10,
        "uploads_completed": set(tasks) <= {"completed", "gone"},
    }
    return result


def drive(
    url: str, pid: int, clients: int, options: tuple[dict[str, int], int], duration_s: float
) -> Soak:
    """The load itself: ``clients`` threads and an RSS sampler, for ``duration_s`` seconds."""
    soak = Soak()
    began = time.monotonic()
    window = (began, began + duration_s)
    threads = [
        threading.Thread(target=client_loop, args=(url, i, options, window, soak))
        for i in range(clients)
    ]
    threads.append(threading.Thread(target=sample_rss, args=(pid, began, window[1], soak)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return soak


def run(
    clients: int,
    duration_s: float,
    options: tuple[dict[str, int], int],
    documents: int,
    warmup_s: float,
) -> dict[str, Any]:
    rng = random.Random(14)
    with tempfile.TemporaryDirectory(prefix="eagle-soak-") as tmp:
        data_dir, port = Path(tmp) / "data", free_port()
        url, log = f"http://127.0.0.1:{port}", Path(tmp) / "server.log"
        with (
            serve(data_dir, port, log, server_env(data_dir), startup_s=STARTUP_S) as process,
            httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT_S) as admin,
        ):
            pool = arrow_pool_of(log)
            seed(admin, documents, rng)
            soak = drive(url, process.pid, clients, options, duration_s)
            # Every upload's own task (GET /tasks lists at most 1,000: a quiet machine's run
            # accepts more, and those would go unchecked).
            tasks = wait_tasks(admin, soak.jobs, timeout=300)
        result = report(soak, warmup_s, tasks)
    result.update(clients=clients, duration_s=duration_s, weights=options[0], keep=options[1])
    result.update(seed_documents=documents, load_average=os.getloadavg())
    result.update(server_arrow_pool=pool)
    return result


def arrow_pool_of(log: Path) -> str:
    """The Arrow memory pool the server reported at start (its first log line says)."""
    found = re.search(r"Arrow memory pool (\w+)", log.read_text(errors="replace"))
    return found.group(1) if found else "not reported"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    parser.add_argument("--warmup", type=float, default=60.0, help="RSS baseline after (s)")
    parser.add_argument("--documents", type=int, default=20, help="documents seeded first")
    parser.add_argument("--search", type=int, default=6, help="weight of /search")
    parser.add_argument("--query", type=int, default=3, help="weight of /query")
    parser.add_argument("--upload", type=int, default=1, help="weight of uploads")
    parser.add_argument(
        "--keep", type=int, default=0, help="per client: delete the oldest upload beyond this"
    )
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    if args.clients < 1 or args.duration <= 0 or args.warmup >= args.duration:
        parser.error("need --clients >= 1 and 0 < --warmup < --duration")
    weights = {"search": args.search, "query": args.query, "upload": args.upload}
    if any(w < 0 for w in weights.values()) or not any(weights.values()):
        parser.error("weights must be >= 0 and not all 0")
    result = run(args.clients, args.duration, (weights, args.keep), args.documents, args.warmup)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
