"""The entity-anchored supplement search, started early so it overlaps the plans' searches.

RETRIEVE_SUPPLEMENT runs after every plan has finished, so its filtered BM25 search used to add
its whole time to the query (the largest of the plugin's hooks in benchmarks/RESULTS.md). For a
query scoped by KB only, the search needs nothing the plans produce: CLASSIFY_QUERY starts it
and RETRIEVE_SUPPLEMENT collects it. The key is the search's content (text, KBs, entities), so
concurrent identical queries share one search and a stale entry can only hold a correct result;
entries that no RETRIEVE_SUPPLEMENT collects (a failed search) are cancelled past ``size``.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

SupplementKey = tuple[str, tuple[str, ...], tuple[str, ...]]  # text, KB names, entity ids
PENDING = 64


class EarlySupplements:
    """Started supplement searches by key; one per app (owned by the runtime)."""

    def __init__(self, size: int = PENDING) -> None:
        self._size = size
        self._tasks: OrderedDict[SupplementKey, asyncio.Task[Any]] = OrderedDict()

    def start(self, key: SupplementKey, search: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``search`` now in the background, unless one for ``key`` is already running."""
        if key in self._tasks:
            return
        self._tasks[key] = asyncio.get_running_loop().create_task(search())
        while len(self._tasks) > self._size:
            _, stale = self._tasks.popitem(last=False)
            discard(stale)

    def take(self, key: SupplementKey) -> asyncio.Task[Any] | None:
        """The started search for ``key`` (now forgotten), or None when none was started."""
        return self._tasks.pop(key, None)

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
