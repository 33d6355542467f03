"""Throttled task progress: the catalog sees a running task's phase without paying per step."""

from __future__ import annotations

import time
from collections.abc import Callable

ProgressWriter = Callable[[str, int, int], None]


class ProgressReporter:
    """Writes ``(phase, current, total)`` at most once per ``interval_s``.

    The first write waits one interval after the attempt starts, so a document that completes
    within it costs no progress writes at all (its task goes processing -> completed); a long one
    shows its phase and batch counts with at most ``interval_s`` of lag. Completion and failure
    are written by the pipeline, never throttled.
    """

    def __init__(
        self,
        write: ProgressWriter,
        interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._interval = interval_s
        self._clock = clock
        self._last = clock()

    def __call__(self, phase: str, current: int, total: int) -> None:
        now = self._clock()
        if self._interval and now - self._last < self._interval:
            return
        self._last = now
        self._write(phase, current, total)
