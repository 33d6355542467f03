"""ProgressReporter: at most one write per interval (a new phase at once), none before the first
interval ends; the cancel check it carries reads the task at most once per interval and stops
the task."""

from __future__ import annotations

import asyncio
import io

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.ingest.cancel import CancelWatch, IngestCancelledError
from eagle_rag.ingest.progress import ProgressReporter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_writes_at_most_once_per_interval() -> None:
    clock, writes = Clock(), []
    report = ProgressReporter(lambda *a: writes.append(a), 0.5, clock=clock)
    report("parse", 0, 1)  # within the first interval: skipped
    clock.now += 0.6
    report("embed", 1, 10)
    report("embed", 2, 10)  # same instant: skipped
    clock.now += 0.2
    report("embed", 3, 10)  # 0.2 s later: skipped
    clock.now += 0.4
    report("embed", 4, 10)
    assert writes == [("embed", 1, 10), ("embed", 4, 10)]


def test_a_new_phase_is_written_at_once_after_the_first_interval() -> None:
    """A phase reported within the interval of the last write was dropped: the task then showed
    "visuals 0/1" through a 100 s embedding batch."""
    clock, writes = Clock(), []
    report = ProgressReporter(lambda *a: writes.append(a), 0.5, clock=clock)
    clock.now += 0.6
    report("visuals", 0, 1)
    clock.now += 0.01
    report("embed", 0, 81)  # a new phase: written although the last write was 0.01 s ago
    report("embed", 1, 81)  # the same phase: throttled
    assert writes == [("visuals", 0, 1), ("embed", 0, 81)]


def test_interval_zero_writes_every_step() -> None:
    clock, writes = Clock(), []
    report = ProgressReporter(lambda *a: writes.append(a), 0.0, clock=clock)
    report("parse", 0, 1)
    report("chunk", 0, 1)
    assert writes == [("parse", 0, 1), ("chunk", 0, 1)]


def test_a_cancel_is_seen_at_the_first_check_after_it_even_between_writes() -> None:
    clock, writes, reads = Clock(), [], []
    status = {"now": "processing"}

    def read() -> str:
        reads.append(clock.now)
        return status["now"]

    watch = CancelWatch(read, 0.5, clock=clock)
    report = ProgressReporter(lambda *a: writes.append(a), 0.5, clock=clock, check=watch)
    pages = report.pages("parse")
    pages(1, 500)  # within the first interval: neither a read nor a write
    clock.now += 0.6
    pages(2, 500)
    pages(3, 500)  # the same instant: no second read
    assert reads == [100.6] and writes == [("parse", 2, 500)]
    status["now"] = "failed"  # what cancel_task writes
    clock.now += 0.6
    with pytest.raises(IngestCancelledError, match="cancelled by request"):
        pages(4, 500)
    with pytest.raises(IngestCancelledError):
        report.check()  # the pipeline's last look before it completes the task
    assert writes == [("parse", 2, 500)]  # nothing reported after the cancel


def test_a_retry_right_after_a_cancel_still_stops_the_old_attempt() -> None:
    clock, status = Clock(), {"now": "processing"}
    watch = CancelWatch(lambda: status["now"], 0.5, clock=clock)
    clock.now += 0.6
    watch()
    # Cancelled and retried within one interval: the row is live again, but not this attempt's
    # (queued for the retry, or "superseded" once another attempt claimed it).
    for seen in ("queued", "superseded"):
        status["now"] = seen
        clock.now += 0.6
        with pytest.raises(IngestCancelledError, match="superseded"):
            watch()
        watch = CancelWatch(lambda: status["now"], 0.5, clock=clock)
        clock.now += 0.6


def test_without_a_check_progress_never_stops_the_task() -> None:
    report = ProgressReporter(lambda *a: None, 0.0, clock=Clock())
    report.check()
    report("embed", 1, 1)


@pytest.mark.asyncio(loop_scope="module")  # the module's app and its queue run on that loop
async def test_embedding_shows_its_phase_before_its_first_batch_ends(
    app: EagleApp, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embed phase was first written when a batch ended: a slow first batch (100 s under
    load) showed the phase before it all along."""
    monkeypatch.setattr(app.settings.ingest, "progress_interval_s", 0.0)
    written: list[tuple[str, int, int]] = []
    write = app.repositories.tasks.progress

    def recorded(task_id: str, *, phase: str, current: int, total: int) -> None:
        written.append((phase, current, total))
        write(task_id, phase=phase, current=current, total=total)

    monkeypatch.setattr(app.repositories.tasks, "progress", recorded)
    text = "\n\n".join(
        f"## Part {n}\n\nPumps and valves of line {n} were checked." for n in range(9)
    )
    await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename="log.md", stream=io.BytesIO(text.encode())
    )
    await app.queue.join()  # type: ignore[attr-defined]
    embeds = [(current, total) for phase, current, total in written if phase == "embed"]
    assert embeds[0][0] == 0 and embeds[-1][0] == embeds[-1][1] > 4  # batches of 4
