"""CPU cores shared by the calls into one in-process model, handed out in arrival order.

A call asks for as many cores as it will use; it runs once it is first in line and that many
are free. So two one-core calls run side by side, a call that spreads over every core runs
alone, and no caller overtakes one that asked earlier (a stream of short queries cannot starve
a batch).

A long piece of one-core work beside batches (a document's visual extraction while its text is
embedded) *reserves* its core: batches then spread over the ``spare`` cores instead of waiting
for all of them, and the model calls that work makes in its own thread (the layout model, OCR)
run on the reserved core rather than queueing behind a batch for another.
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
        self._reserved = 0
        self._holder = threading.local()  # .cores: what this thread reserved (0: nothing)

    @property
    def spare(self) -> int:
        """The cores a batch may spread over now: all but the reserved ones, at least one."""
        return max(1, self.cores - self._reserved)

    @contextlib.contextmanager
    def take(self, cores: int) -> Iterator[int]:
        """Hold ``cores`` (at most the whole budget) for the ``with`` block; yields the count.
        In a thread holding a reservation, the reserved cores (taken already)."""
        reserved = getattr(self._holder, "cores", 0)
        if reserved:
            yield reserved
            return
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

    @contextlib.contextmanager
    def reserve(self, cores: int = 1) -> Iterator[int]:
        """Hold ``cores`` for this thread's long work in the ``with`` block (see the module's
        docstring); yields the count."""
        cores = max(1, min(cores, self.cores))
        with self._changed:  # counted from the asking: batches asking after it leave it room
            self._reserved += cores
        try:
            with self.take(cores) as held:
                self._holder.cores = held
                try:
                    yield held
                finally:
                    self._holder.cores = 0
        finally:
            with self._changed:
                self._reserved -= cores
