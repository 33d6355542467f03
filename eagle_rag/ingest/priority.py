"""In-process ingest work in threads of its own, at a lower OS scheduling priority.

The embedded server runs its ingest workers on the event loop that serves requests, and their
CPU work (parse, chunk, embed, upsert) goes through ``asyncio.to_thread`` like a search's. Both
then shared the loop's one default executor: a search's thread work waited behind embedding
batches for a free thread, and ran at the same priority as them on a machine with few cores
(the load soak's ``/search`` p95 was 5.8x its p50 with uploads, 2.7x without).

``SplitExecutor`` becomes the loop's default executor: calls made inside an ingest worker's
task (``INGEST_WORK`` is set in its context, which ``to_thread`` and child tasks inherit) run
in a small pool whose threads lowered their own nice value (Linux schedules threads, so
``setpriority`` on the native thread id affects that thread only); every other call runs in
the usual pool at the process's priority. Threads a library starts inherit the priority of the
thread that starts them. OpenMP (the offline embedder) keeps a team per calling thread, so an
ingest batch's team runs at the ingest priority and a query's at the requests' (a test checks
it). An ONNX session's intra-op pool is the session's, shared by every caller: such models are
loaded before the workers start (``warm_encoders``), at the process's priority, so queries
never run in threads an ingest thread started.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")
MAX_NICE = 19

# True inside an ingest worker's task (and what it awaits): its thread work goes to the
# lower-priority pool. A ContextVar, not process state: each task carries its own value.
INGEST_WORK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "eagle_ingest_work", default=False
)


def lower_this_thread(increment: int) -> None:
    """Raise the calling thread's nice value by ``increment`` (capped at 19); a platform
    without per-thread priorities keeps the thread as it is, with a warning."""
    try:
        thread = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(MAX_NICE, current + increment))
    except (AttributeError, OSError) as exc:
        logger.warning("ingest threads keep the process's priority: %s", exc)


class SplitExecutor(ThreadPoolExecutor):
    """The loop's default executor: ingest work to a lower-priority pool, the rest as usual.

    A ThreadPoolExecutor itself because asyncio accepts nothing else as a default executor.
    """

    def __init__(self, *, ingest_threads: int, ingest_nice: int) -> None:
        super().__init__(thread_name_prefix="eagle-request")
        self.ingest = ThreadPoolExecutor(
            max_workers=ingest_threads,
            thread_name_prefix="eagle-ingest",
            initializer=lower_this_thread,
            initargs=(ingest_nice,),
        )

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if INGEST_WORK.get():
            return self.ingest.submit(fn, *args, **kwargs)
        return super().submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.ingest.shutdown(wait=wait, cancel_futures=cancel_futures)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)


def install_split_executor(loop: asyncio.AbstractEventLoop, threads: int, nice: int) -> None:
    """Make a SplitExecutor the loop's default executor, once per loop (a second queue on the
    same loop, as tests start them, reuses it). The executor it replaces finishes what it runs
    and then lets its threads go."""
    # asyncio has no public getter for the default executor; CPython's loops keep it here.
    current = getattr(loop, "_default_executor", None)
    if isinstance(current, SplitExecutor):
        return
    loop.set_default_executor(SplitExecutor(ingest_threads=threads, ingest_nice=nice))
    if isinstance(current, ThreadPoolExecutor):
        current.shutdown(wait=False)


def warm_encoders(encoders: Iterable[object]) -> None:
    """Run each local encoder's ``warm()`` (models that start thread pools) in this thread; a
    model that cannot load is logged and loads on first use as before."""
    for encoder in encoders:
        warm = getattr(encoder, "warm", None)
        if not callable(warm):
            continue
        try:
            warm()
        except Exception as exc:  # a missing package or model: its first use says so again
            logger.warning("could not load %s before the workers: %s", encoder, exc)
