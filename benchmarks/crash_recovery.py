"""Crash recovery: ``kill -9`` of ``eagle-rag serve`` while its ingest tasks run, then a restart.

A real server process on a temp data dir and a free port; N documents uploaded, each with a
unique marker word; SIGKILL once the uploads are in (tasks queued and processing); a restart on
the same data dir. Then, with no manual retry: every document must end ``completed``, each
marker word (a BM25 search) must find exactly its own document, no document may have duplicate
chunks, and the consistency check must be clean. Issue 14's bar: 40 documents.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.crash_recovery --documents 40
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

KB = "crash"
WORDS = [
    *("river", "stone", "garden", "lantern", "harbor", "meadow", "copper", "violet", "thunder"),
    *("orchard", "canyon", "glacier", "willow", "ember", "falcon", "prairie", "summit"),
    *("quarry", "marble", "cedar"),
]


@dataclass
class CrashResult:
    documents: int
    at_kill: dict[str, int]  # task statuses the moment the server was killed
    recovery_s: float  # restart (process start) until every document completed
    statuses: dict[str, int]  # document statuses at the end
    markers_exact: int  # markers whose BM25 search found exactly their own document
    duplicate_chunks: int
    chunk_mismatches: int  # documents whose stored chunks differ from their chunk_count
    requeued: int  # tasks the restarted server re-queued by itself
    reingested: int = 0  # completed before the kill, but their unflushed vectors died with it
    consistency: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def marker(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


def document_text(word: str, index: int, paragraphs: int, rng: random.Random) -> str:
    """A markdown document with sections; its marker word appears in one paragraph only."""
    lines = [f"# Report {index}", ""]
    for p in range(paragraphs):
        if p % 5 == 0:
            lines += [f"## Part {p // 5 + 1}", ""]
        sentence = " ".join(rng.choice(WORDS) for _ in range(60))
        if p == paragraphs // 2:
            sentence += f" The code word is {word}."
        lines += [sentence + ".", ""]
    return "\n".join(lines)


# What the ``eagle-rag`` console script runs (the launcher sets the allocator defaults before
# libarrow loads); a checkout from before the launcher (``SERVER_PYTHONPATH``) runs its CLI.
CLI_ENTRY = (
    "try:\n    from eagle_rag.launcher import main\n"
    "except ImportError:\n    from eagle_rag.cli import app as main\n"
    "main()"
)


def server_env(data_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment; ``SERVER_PYTHONPATH`` runs another checkout (a before/after)."""
    path = os.environ.get("SERVER_PYTHONPATH")
    return {
        **os.environ,
        **({"PYTHONPATH": path} if path else {}),
        "EAGLE_DATA_DIR": str(data_dir),
        "EAGLE_ENCODER_MODE": "deterministic",
        "PYTHONUNBUFFERED": "1",
        **(extra or {}),
    }


@contextmanager
def serve(
    data_dir: Path, port: int, log: Path, env: dict[str, str], *, startup_s: float = 120
) -> Iterator[subprocess.Popen[bytes]]:
    """``eagle-rag serve`` as its own process; yields once /health answers."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-c", CLI_ENTRY, "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("ab") as out:
        # cwd outside any checkout: with ``-c``, the working directory comes first on sys.path.
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=data_dir.parent
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, log, startup_s)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_healthy(
    url: str, process: subprocess.Popen[bytes], log: Path, startup_s: float = 120
) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not become healthy within {startup_s:g} s")


def upload_all(client: httpx.Client, texts: list[str]) -> list[dict[str, Any]]:
    submissions = []
    for i, text in enumerate(texts):
        answer = client.post(
            "/ingest",
            data={"kb_name": KB},
            files={"file": (f"report-{i:03d}.md", text.encode(), "text/markdown")},
        )
        answer.raise_for_status()
        submissions.append(answer.json())
    return submissions


def task_statuses(client: httpx.Client) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in client.get("/tasks", params={"kb_name": KB, "limit": 1000}).json():
        counts[task["status"]] = counts.get(task["status"], 0) + 1
    return counts


def wait_all_completed(client: httpx.Client, count: int, timeout: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    statuses: dict[str, int] = {}
    while time.monotonic() < deadline:
        documents = client.get("/documents", params={"kb_name": KB, "limit": 500}).json()
        statuses = {}
        for d in documents:
            statuses[d["status"]] = statuses.get(d["status"], 0) + 1
        if statuses.get("completed", 0) == count or statuses.get("failed"):
            return statuses
        time.sleep(0.5)
    return statuses


def check_markers(client: httpx.Client, markers: dict[str, str]) -> tuple[int, list[str]]:
    exact, problems = 0, []
    for word, document_id in markers.items():
        body = {"query": word, "kb_name": KB, "mode": "sparse", "top_k": 10}
        answer = client.post("/search", json=body)
        answer.raise_for_status()
        sources = answer.json()["sources"]["text"]
        found = {s["document_id"] for s in sources}  # a unique word: only its own may match
        if found == {document_id}:
            exact += 1
        else:
            problems.append(f"marker {word}: found {sorted(found)}, expected {document_id}")
    return exact, problems


def check_chunks(client: httpx.Client, document_ids: list[str]) -> tuple[int, int, list[str]]:
    duplicates = mismatches = 0
    problems = []
    for document_id in document_ids:
        chunks = client.get(f"/documents/{document_id}/chunks", params={"limit": 10_000}).json()
        ids = [c["chunk_id"] for c in chunks["chunks"]]
        expected = client.get(f"/documents/{document_id}").json()["chunk_count"]
        if len(ids) != len(set(ids)):
            duplicates += len(ids) - len(set(ids))
            problems.append(f"{document_id}: {len(ids) - len(set(ids))} duplicate chunks")
        if len(set(ids)) != expected:
            mismatches += 1
            problems.append(f"{document_id}: {len(set(ids))} chunks stored, {expected} recorded")
    return duplicates, mismatches, problems


def consistency(data_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """``eagle-rag doctor --consistency --json`` on the stopped server's data dir."""
    command = [sys.executable, "-c", CLI_ENTRY, "doctor"]
    command += ["--consistency", "--json"]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, cwd=data_dir.parent
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"exit_code": done.returncode, "error": (done.stdout + done.stderr)[-2000:]}
    report["exit_code"] = done.returncode
    return report


def run(
    documents: int,
    *,
    paragraphs: int = 60,
    kill_after_s: float = 1.0,
    timeout_s: float = 300,
    seed: int = 14,
    base: Path | None = None,
    check_consistency: bool = True,
) -> CrashResult:
    rng = random.Random(seed)
    base = base or Path(tempfile.mkdtemp(prefix="eagle-crash-"))
    data_dir, log = base / "data", base / "server.log"
    env = server_env(data_dir)
    words = [marker(rng) for _ in range(documents)]
    texts = [document_text(w, i, paragraphs, rng) for i, w in enumerate(words)]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serve(data_dir, port, log, env) as first, httpx.Client(base_url=url, timeout=60) as c:
        assert c.post("/knowledge_bases", json={"kb_name": KB}).status_code == 201
        submissions = upload_all(c, texts)
        time.sleep(kill_after_s)
        at_kill = task_statuses(c)
        first.send_signal(signal.SIGKILL)  # no clean-up of any kind
        first.wait()
    markers = {w: s["document_id"] for w, s in zip(words, submissions, strict=True)}
    started = time.monotonic()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serve(data_dir, port, log, env), httpx.Client(base_url=url, timeout=60) as client:
        statuses = wait_all_completed(client, documents, timeout_s)
        recovery = time.monotonic() - started
        exact, problems = check_markers(client, markers)
        duplicates, mismatches, chunk_problems = check_chunks(client, list(markers.values()))
        logs = [
            client.get(f"/tasks/{t['job_id']}").json().get("log", [])
            for t in client.get("/tasks", params={"kb_name": KB, "limit": 1000}).json()
        ]
    retried_by_hand = sum(any("retried by hand" in line for line in log) for log in logs)
    requeued = sum(any("re-queued" in line for line in log) for log in logs)
    relost = sum(any("vectors were lost" in line for line in log) for log in logs)
    result = CrashResult(
        documents, at_kill, round(recovery, 1), statuses, exact, duplicates, mismatches, requeued
    )
    result.reingested = relost
    result.failures += problems + chunk_problems
    if at_kill.get("completed", 0) == documents:
        result.failures.append("every task had completed before the kill: nothing was tested")
    if statuses.get("completed", 0) != documents:
        result.failures.append(f"documents not all completed: {statuses}")
    if retried_by_hand:
        result.failures.append(f"{retried_by_hand} tasks were retried by hand")
    if check_consistency:
        result.consistency = consistency(data_dir, env)
        if result.consistency.get("exit_code") != 0:
            result.failures.append(f"consistency check not clean: {result.consistency}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--paragraphs", type=int, default=60)
    parser.add_argument("--kill-after", type=float, default=1.0)
    args = parser.parse_args()
    result = run(args.documents, paragraphs=args.paragraphs, kill_after_s=args.kill_after)
    print(json.dumps({**asdict(result), "ok": result.ok}, indent=2))
    sys.exit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
