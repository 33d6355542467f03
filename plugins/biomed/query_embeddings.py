"""EMBED_TEXT for queries: one embedding per query text, shared by the search's plans.

An entity query runs two text plans (eagle_text and eagle_text_biomed) with the same encoder,
and each plan embeds the query: the second embedding is pure cost (in the pubmedqa run of
benchmarks/RESULTS.md it was most of the biomed profile's extra query time). Concurrent
requests for the same (encoder, text) share one in-flight embedding; recent results are kept
in a small LRU. Passages (ingest) are never cached.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from eagle_rag.plugins.payloads import EmbeddingBatch, EmbedRequest

CACHE_SIZE = 256


class SharedQueryEmbeddings:
    """A per-app EMBED_TEXT subscriber that dedupes query embeddings."""

    def __init__(self, encoders: Any, size: int = CACHE_SIZE) -> None:
        self._encoders = encoders
        self._size = size
        self._done: OrderedDict[tuple[str, str], EmbeddingBatch] = OrderedDict()
        self._running: dict[tuple[int, str, str], asyncio.Future[EmbeddingBatch]] = {}

    async def embed(self, request: EmbedRequest) -> EmbeddingBatch | None:
        if request.purpose != "query" or len(request.texts) != 1:
            return None  # passages and batches: Core embeds them
        key = (request.encoder, request.texts[0])
        cached = self._done.get(key)
        if cached is not None:
            self._done.move_to_end(key)
            return cached
        loop = asyncio.get_running_loop()
        running_key = (id(loop), *key)
        running = self._running.get(running_key)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[EmbeddingBatch] = loop.create_future()
        self._running[running_key] = future
        try:
            batch = await self._compute(request)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a failure nobody else awaited is not logged twice
            raise
        finally:
            self._running.pop(running_key, None)
        future.set_result(batch)
        self._remember(key, batch)
        return batch

    async def _compute(self, request: EmbedRequest) -> EmbeddingBatch:
        encoder = self._encoders.get(request.encoder)
        vectors = await asyncio.to_thread(encoder.embed_queries, list(request.texts))
        return EmbeddingBatch(encoder.name, encoder.dim, vectors.tolist())

    def _remember(self, key: tuple[str, str], batch: EmbeddingBatch) -> None:
        self._done[key] = batch
        if len(self._done) > self._size:
            self._done.popitem(last=False)

    def clear(self) -> None:
        """Forget finished embeddings (a benchmark measuring cold queries calls this)."""
        self._done.clear()

    def __len__(self) -> int:
        return len(self._done)
