"""ProgressReporter: at most one write per interval, none before the first interval ends."""

from __future__ import annotations

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


def test_interval_zero_writes_every_step() -> None:
    clock, writes = Clock(), []
    report = ProgressReporter(lambda *a: writes.append(a), 0.0, clock=clock)
    report("parse", 0, 1)
    report("chunk", 0, 1)
    assert writes == [("parse", 0, 1), ("chunk", 0, 1)]
