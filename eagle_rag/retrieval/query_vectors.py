"""One search's query vectors, shared by its plans: plans that embed the same text with the
same encoder (the text plan and the summary-embedded visual plan) wait for one embedding."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class QueryVectors:
    """Per search (never shared between searches): ``(encoder, text) → vector``."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], asyncio.Future[list[float]]] = {}

    async def get(
        self, encoder: str, text: str, embed: Callable[[], Awaitable[list[float]]]
    ) -> list[float]:
        """The vector, embedded by the first caller; later callers await the same result (and
        its failure: each plan then reports it on its own)."""
        key = (encoder, text)
        future = self._pending.get(key)
        if future is None:
            future = asyncio.ensure_future(embed())
            self._pending[key] = future
        return list(await asyncio.shield(future))
