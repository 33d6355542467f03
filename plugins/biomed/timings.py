"""Per-hook timings of the biomed subscribers: what the plugin costs, hook by hook.

Each subscriber is wrapped when it subscribes; the wrapper keeps the subscriber's signature
(the bus reads it) and adds its wall time to a per-app counter, read by benchmarks and
``BiomedPlugin.runtime.timings.snapshot()``.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any


class HookTimings:
    """Calls and total milliseconds per hook name; thread-safe (hooks run in worker threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, list[float]] = {}

    def record(self, hook: str, ms: float) -> None:
        with self._lock:
            entry = self._totals.setdefault(hook, [0, 0.0])
            entry[0] += 1
            entry[1] += ms

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {
                hook: {
                    "calls": calls,
                    "total_ms": round(total, 2),
                    "mean_ms": round(total / calls, 3),
                }
                for hook, (calls, total) in sorted(self._totals.items())
            }

    def reset(self) -> None:
        with self._lock:
            self._totals.clear()

    def wrap(self, hook: str, handler: Callable[..., Any]) -> Callable[..., Any]:
        """``handler`` timed under ``hook``, with the same signature and sync/async kind."""
        if inspect.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await handler(*args, **kwargs)
                finally:
                    self.record(hook, (time.perf_counter() - started) * 1000)

            return timed_async

        @functools.wraps(handler)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return handler(*args, **kwargs)
            finally:
                self.record(hook, (time.perf_counter() - started) * 1000)

        return timed
