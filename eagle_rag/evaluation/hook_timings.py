"""Per-hook timings of an evaluation: what each plugin's subscribers cost, hook by hook.

The evaluator hands :meth:`HookCallTimes.record` to ``HookBus.observe`` for the run; each phase
(ingest, then every mode) takes a snapshot and starts afresh, so a report shows, say, that the
biomed plugin's RETRIEVE_SUPPLEMENT took 12 ms per query while Core's RERANK abstained in 0.01.
"""

from __future__ import annotations

import threading

PhaseTimings = dict[str, dict[str, float]]  # "HOOK plugin" → calls, total_ms, mean_ms


class HookCallTimes:
    """Calls and total milliseconds per (hook, plugin); thread-safe (Celery-less ingest runs
    subscribers from worker tasks)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[tuple[str, str], list[float]] = {}

    def record(self, hook: str, plugin: str, ms: float) -> None:
        with self._lock:
            entry = self._totals.setdefault((hook, plugin), [0.0, 0.0])
            entry[0] += 1
            entry[1] += ms

    def take(self) -> PhaseTimings:
        """The timings since the last ``take`` (sorted by hook, then plugin), then reset."""
        with self._lock:
            totals, self._totals = self._totals, {}
        return {
            f"{hook} {plugin}": {
                "calls": calls,
                "total_ms": round(total, 2),
                "mean_ms": round(total / calls, 3),
            }
            for (hook, plugin), (calls, total) in sorted(totals.items())
        }
