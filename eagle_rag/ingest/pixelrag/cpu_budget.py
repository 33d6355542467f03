"""A per-document budget of CPU seconds for an optional model pass (layout on text pages, OCR
of pictures): when it is spent, the pass is skipped for the rest of the document.

The budget counts CPU seconds of the calling thread (the models run there, on one onnxruntime
thread by default), not wall time: on a loaded machine, or while a page waits for its turn on
the shared cores, a wall-clock budget ran out pages earlier, and the same document lost charts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class CpuBudget:
    """``budget_s`` CPU seconds for one document; ``spend`` runs work until they are gone."""

    budget_s: float
    spent_s: float = field(default=0.0)

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.budget_s - self.spent_s)

    @property
    def exhausted(self) -> bool:
        return self.spent_s >= self.budget_s

    def spend(self, work: Callable[[], T], otherwise: T) -> T:
        """``work()``, its CPU time counted; ``otherwise`` once the budget is spent."""
        if self.exhausted:
            return otherwise
        started = time.thread_time()
        try:
            return work()
        finally:
            self.spent_s += time.thread_time() - started
