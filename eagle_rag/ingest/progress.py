"""Throttled task progress: the catalog sees a running task's phase without paying per step.

The same calls are where a running task notices it was cancelled: a long scan reports every
page, so it stops within a page of the request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

ProgressWriter = Callable[[str, int, int], None]
PageCallback = Callable[[int, int], None]
# The HookContext.extra key under which the pipeline hands PARSE_DOCUMENT its page callback.
PAGE_CALLBACK = "on_page"


class ProgressReporter:
    """Writes ``(phase, current, total)`` at most once per ``interval_s``.

    The first write waits one interval after the attempt starts, so a document that completes
    within it costs no progress writes at all (its task goes processing -> completed); a long one
    shows its batch counts with at most ``interval_s`` of lag, and a new phase at once: a phase
    reported within the interval of the last write was dropped, and a long step after it (a
    slow embedding batch) showed the phase before it ("visuals 0/1" for 100 s of embedding).
    Completion and failure are written by the pipeline, never throttled.

    ``check``, when given, runs on every report (it throttles itself) and may raise to stop the
    task (see ``cancel.CancelWatch``).
    """

    def __init__(
        self,
        write: ProgressWriter,
        interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        check: Callable[[], None] | None = None,
    ) -> None:
        self._write = write
        self._interval = interval_s
        self._clock = clock
        self._started = self._last = clock()
        self._phase = ""  # the phase last written
        self._check = check

    def __call__(self, phase: str, current: int, total: int) -> None:
        self.check()
        now = self._clock()
        if self._interval:
            young = now - self._started < self._interval
            recent = now - self._last < self._interval
            if young or (recent and phase == self._phase):
                return
        self._last, self._phase = now, phase
        self._write(phase, current, total)

    def check(self) -> None:
        """Raise if the task should stop (it was cancelled); a no-op without a check."""
        if self._check is not None:
            self._check()

    def pages(self, phase: str) -> PageCallback:
        """A parser's ``on_page(done, total)`` reporting pages as ``phase`` progress."""
        return lambda done, total: self(phase, done, total)


def page_callback(extra: Mapping[str, Any]) -> PageCallback | None:
    """The page callback the pipeline put in a HookContext's ``extra``, if any."""
    found = extra.get(PAGE_CALLBACK)
    return found if callable(found) else None
