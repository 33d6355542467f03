"""What grows in the server process per uploaded document: RSS against Python objects.

An in-process server (the app ``eagle-rag serve`` runs, under uvicorn on a thread of this
process, embedded default: SQLite, Milvus Lite, deterministic encoder) takes ``--warm``
documents, then ``--documents`` more in batches, each batch with as many ``/search`` and
``/query`` calls. Printed: RSS (anonymous and file-backed), the pyarrow pool Milvus Lite
allocates from, glibc's heap (in use, free but kept, mmapped chunks), SQLite's allocations,
thread counts, and the Python objects by type that are new since the warm-up (``gc``), so
growth held by Python objects reads apart from native growth; then what ``malloc_trim(0)``
returns to the system.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python -m benchmarks.server_memory --documents 240

Arrow's pool is the one ``eagle-rag serve`` gets (eagle_rag/launcher.py: ``system``); run with
``ARROW_DEFAULT_MEMORY_POOL=mimalloc`` for Arrow's own default.
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
from eagle_rag.launcher import prepare_process

MIB = 1024 * 1024


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (glibc >= 2.33): every arena's totals, in bytes."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",  # bytes the heaps took from the system (sbrk and arena mmaps)
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",  # bytes in chunks mmapped on their own (above the mmap threshold)
            "usmblks",
            "fsmblks",
            "uordblks",  # bytes in use in the heaps
            "fordblks",  # bytes free in the heaps (kept, not returned)
            "keepcost",
        )
    ]


def glibc_heap() -> dict[str, float]:
    """What glibc's malloc holds: in use, free but kept, and mmapped chunks (MiB)."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return {
        "malloc_in_use_mib": round(info.uordblks / MIB, 1),
        "malloc_free_kept_mib": round(info.fordblks / MIB, 1),
        "malloc_mmapped_mib": round(info.hblkhd / MIB, 1),
    }


def sqlite_mib() -> float:
    """The process's SQLite allocations (page caches of every connection included)."""
    lib = ctypes.CDLL("libsqlite3.so.0")
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return round(lib.sqlite3_memory_used() / MIB, 1)


def os_threads(pid: int) -> int:
    """Threads of the process, native ones (gRPC's, the arrow pool's) included."""
    return sum(1 for _ in Path(f"/proc/{pid}/task").iterdir())


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
        **glibc_heap(),
        "sqlite_mib": sqlite_mib(),
        "threads": threading.active_count(),
        "os_threads": os_threads(pid),
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


def start_server(port: int) -> tuple[Any, threading.Thread]:
    import uvicorn

    from eagle_rag.api.app import create_app
    from eagle_rag.cli.common import settings_from_env

    api = create_app(settings_from_env())
    config = uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    return server, thread


def wait_started(server: Any, thread: threading.Thread, client: httpx.Client) -> None:
    """Until this process's server answers. Its thread ends if the port was taken meanwhile
    (another process on a shared machine), and then /health could answer from that process."""
    deadline = time.monotonic() + 600
    while not (server.started and _healthy(client)):
        if not thread.is_alive():
            raise RuntimeError("the server stopped while starting (port taken?)")
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(1)


def measure(warm: int, documents: int, size: int) -> dict[str, Any]:
    port, rng = free_port(), random.Random(1)
    server, thread = start_server(port)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
        wait_started(server, thread, client)
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
    # As the ``eagle-rag`` entry point does, before anything loads libarrow (set
    # ARROW_DEFAULT_MEMORY_POOL=mimalloc to measure Arrow's own default).
    pool = prepare_process()
    with tempfile.TemporaryDirectory(prefix="eagle-memory-") as tmp:
        os.environ["EAGLE_DATA_DIR"] = str(Path(tmp) / "data")
        os.environ.setdefault("EAGLE_ENCODER_MODE", "deterministic")
        result = {"arrow_pool": pool, **measure(args.warm, args.documents, args.batch)}
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
