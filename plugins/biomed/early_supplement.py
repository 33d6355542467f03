"""The entity-anchored supplement search, started early so it overlaps the plans' searches.

RETRIEVE_SUPPLEMENT runs after every plan has finished, so its filtered BM25 search used to add
its whole time to the query (the largest of the plugin's hooks in benchmarks/RESULTS.md). For a
query scoped by KB only, the search needs nothing the plans produce: CLASSIFY_QUERY starts it
and RETRIEVE_SUPPLEMENT collects it. The key is the search's content (text, KBs, entities), so
concurrent identical queries share one search. Entries that no RETRIEVE_SUPPLEMENT collects
(every plan failed, or no plan needed it) are dropped past ``size`` or once older than
``max_age_s``: a later identical query must not get hits read before documents changed.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

SupplementKey = tuple[str, tuple[str, ...], tuple[str, ...]]  # text, KB names, entity ids
PENDING = 64
MAX_AGE_S = 30.0  # far longer than one query; a result older than this is not its query's


class EarlySupplements:
    """Started supplement searches by key; one per app (owned by the runtime)."""

    def __init__(
        self,
        size: int = PENDING,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._size = size
        self._max_age_s = max_age_s
        self._clock = clock
        self._tasks: OrderedDict[SupplementKey, tuple[float, asyncio.Task[Any]]] = OrderedDict()

    def start(self, key: SupplementKey, search: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``search`` now in the background, unless one for ``key`` is already running."""
        self._drop_expired()
        if key in self._tasks:
            return
        task = asyncio.get_running_loop().create_task(search())
        self._tasks[key] = (self._clock(), task)
        while len(self._tasks) > self._size:
            _, (_, stale) = self._tasks.popitem(last=False)
            discard(stale)

    def take(self, key: SupplementKey) -> asyncio.Task[Any] | None:
        """The started search for ``key`` (now forgotten), or None when none was started or
        it is too old to be this query's."""
        self._drop_expired()
        entry = self._tasks.pop(key, None)
        return entry[1] if entry is not None else None

    def _drop_expired(self) -> None:
        oldest = self._clock() - self._max_age_s
        while self._tasks:
            key, (started, task) = next(iter(self._tasks.items()))
            if started >= oldest:
                return
            del self._tasks[key]
            discard(task)

    def __len__(self) -> int:
        return len(self._tasks)


def discard(task: asyncio.Task[Any]) -> None:
    """Cancel a search nobody will await; one that already failed has its error read, so
    asyncio does not log it as never retrieved (the plugin's own search failing is not news)."""
    if task.done():
        if not task.cancelled():
            task.exception()
        return
    task.cancel()
