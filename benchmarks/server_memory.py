"""What grows in the server process per uploaded document: RSS against Python objects.

An in-process server (the app ``eagle-rag serve`` runs, under uvicorn on a thread of this
process, embedded default: SQLite, Milvus Lite, deterministic encoder) takes ``--warm``
documents, then ``--documents`` more in batches, each batch with as many ``/search`` and
``/query`` calls. Printed: RSS (anonymous and file-backed), the pyarrow pool Milvus Lite
allocates from, and the Python objects by type that are new since the warm-up (``gc``), so
growth held by Python objects reads apart from native growth; then what ``malloc_trim(0)``
returns to the system.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python -m benchmarks.server_memory --documents 240
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import os
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.crash_recovery import WORDS, free_port
from benchmarks.load_soak import KB, upload, wait_tasks
from benchmarks.upload_memory import status_bytes

MIB = 1024 * 1024


def memory() -> dict[str, float]:
    import pyarrow as pa

    pool = pa.default_memory_pool()
    pid = os.getpid()
    return {
        "rss_mib": round(status_bytes(pid, "VmRSS") / MIB, 1),
        "anon_mib": round(status_bytes(pid, "RssAnon") / MIB, 1),
        "file_mib": round(status_bytes(pid, "RssFile") / MIB, 1),
        "arrow_mib": round(pool.bytes_allocated() / MIB, 1),
        "arrow_peak_mib": round(pool.max_memory() / MIB, 1),
    }


def census() -> collections.Counter[str]:
    gc.collect()
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


def batch(client: httpx.Client, rng: random.Random, size: int) -> None:
    jobs = [upload(client, rng).json()["job_id"] for _ in range(size)]
    for _ in range(size):
        for route in ("/search", "/query"):
            query = " ".join(rng.sample(WORDS, 3))
            client.post(route, json={"query": query, "kb_name": KB, "top_k": 5})
    wait_tasks(client, jobs, timeout=600)


def start_server(port: int) -> Any:
    import uvicorn

    from eagle_rag.api.app import create_app
    from eagle_rag.cli.common import settings_from_env

    api = create_app(settings_from_env())
    config = uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    return server


def measure(warm: int, documents: int, size: int) -> dict[str, Any]:
    port, rng = free_port(), random.Random(1)
    server = start_server(port)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
        deadline = time.monotonic() + 600
        while not _healthy(client):
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(1)
        client.post("/knowledge_bases", json={"kb_name": KB})
        batch(client, rng, warm)
        before, steps = census(), [{"documents": warm, **memory()}]
        for done in range(size, documents + 1, size):
            batch(client, rng, size)
            steps.append({"documents": warm + done, **memory()})
    grown = census() - before
    trimmed = ctypes.CDLL("libc.so.6").malloc_trim(0)
    server.should_exit = True
    growth = steps[-1]["rss_mib"] - steps[0]["rss_mib"]
    return {
        "steps": steps,
        "rss_growth_mib": round(growth, 1),
        "rss_growth_per_document_kib": round(growth * 1024 / max(1, documents), 1),
        "python_objects_new": sum(grown.values()),
        "python_objects_top": dict(grown.most_common(10)),
        "after_malloc_trim": {"returned": bool(trimmed), **memory()},
    }


def _healthy(client: httpx.Client) -> bool:
    try:
        return client.get("/health").status_code < 500
    except httpx.HTTPError:
        return False


def main() -> None:
    import json

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--warm", type=int, default=40, help="documents before the baseline")
    parser.add_argument("--documents", type=int, default=240, help="documents measured")
    parser.add_argument("--batch", type=int, default=40)
    args = parser.parse_args()
    if min(args.warm, args.documents, args.batch) < 1:
        parser.error("--warm, --documents and --batch must be >= 1")
    with tempfile.TemporaryDirectory(prefix="eagle-memory-") as tmp:
        os.environ["EAGLE_DATA_DIR"] = str(Path(tmp) / "data")
        os.environ.setdefault("EAGLE_ENCODER_MODE", "deterministic")
        print(json.dumps(measure(args.warm, args.documents, args.batch), indent=2))


if __name__ == "__main__":
    main()
