"""CPU cores shared by the calls into one in-process model, handed out in arrival order.

A call asks for as many cores as it will use; it runs once it is first in line and that many
are free. So two one-core calls run side by side, a call that spreads over every core runs
alone, and no caller overtakes one that asked earlier (a stream of short queries cannot starve
a batch).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterator


class CoreBudget:
    def __init__(self, cores: int) -> None:
        if cores < 1:
            raise ValueError("a core budget needs at least one core")
        self.cores = cores
        self._free = cores
        self._line: deque[object] = deque()
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def take(self, cores: int) -> Iterator[int]:
        """Hold ``cores`` (at most the whole budget) for the ``with`` block; yields the count."""
        cores = max(1, min(cores, self.cores))
        ticket = object()
        with self._changed:
            self._line.append(ticket)
            self._changed.wait_for(lambda: self._line[0] is ticket and self._free >= cores)
            self._line.popleft()
            self._free -= cores
            self._changed.notify_all()  # the next in line may fit beside this call
        try:
            yield cores
        finally:
            with self._changed:
                self._free += cores
                self._changed.notify_all()
