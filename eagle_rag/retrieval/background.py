"""The background of a dense list that has none of its own: how similar a query is to text
about nothing it asks.

A hit's dense relevance is measured from the background of its query (fusion.plan_relevance):
normally the last score of the list's head, the 20th most similar passage. A list shorter than
its head has no such passage: the search ran out of rows (a KB of one document, a filter on one
file), and its last hit is evidence, not background. Measured against itself, a KB's only
passage scored a dense relevance of 0 for every question, so one-passage searches showed 0.5
whatever was asked.

For those lists the background is the query's similarity to a fixed set of probe passages on
everyday topics no knowledge base is about (English and Chinese, the two languages the
product is tuned for), embedded once per encoder with the encoder that embedded the
collection's rows (a domain plugin's passage encoder, not its query encoder):
the 90th percentile of the query's cosine to them. Measured with the bundled encoder on 80
queries of each of msmarco, pubmedqa-dev, cmrc2018-trial and scifact-train (median): a relevant
passage alone scores 0.48 to 0.63 on this scale, a random passage of the same corpus 0.02 to 0.24.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from eagle_rag.plugins.encoder_registry import EncoderRegistry
    from eagle_rag.settings import RetrievalSettings

log = logging.getLogger(__name__)

BACKGROUND_QUANTILE = 0.9
PROBES = (
    "The recipe calls for two cups of flour, a pinch of salt and warm water.",
    "The match ended in a draw after the striker missed a penalty in extra time.",
    "Migrating birds follow the coastline south as the autumn nights grow longer.",
    "Tenants must give the landlord one month's written notice before moving out.",
    "The orchestra tuned their instruments while the audience found their seats.",
    "Volcanic soil on the island makes it ideal for growing coffee and grapes.",
    "Press the reset button for ten seconds until the light starts blinking.",
    "The museum's new wing displays pottery from the bronze age.",
    "Interest rates were left unchanged at the central bank's quarterly meeting.",
    "Children under twelve travel free when accompanied by a paying adult.",
    "The hiking trail climbs steeply through pine forest to a mountain lake.",
    "Our support team answers emails within two business days.",
    "这道菜需要先把土豆切成小块，再用小火慢慢炖煮。",
    "比赛在加时赛结束后双方仍然战平，最终通过点球决出胜负。",
    "候鸟在秋天沿着海岸线向南迁徙，寻找温暖的越冬地。",
    "租客搬离前需要提前一个月书面通知房东。",
    "音乐会开始前，乐团成员在台上调试各自的乐器。",
    "这个岛上的火山土壤非常适合种植咖啡和葡萄。",
    "长按重置按钮十秒钟，直到指示灯开始闪烁。",
    "博物馆新开放的展厅陈列着青铜时代的陶器。",
    "央行在季度会议上决定维持利率不变。",
    "十二岁以下的儿童在成人陪同下可以免费乘车。",
    "登山步道穿过松树林，一路陡峭地通往山顶的湖泊。",
    "客服团队会在两个工作日内回复您的邮件。",
)

# Embeds texts as passages with one encoder: the probes, through the same EMBED_TEXT hook the
# collection's rows were embedded with.
EmbedPassages = Callable[[Sequence[str]], Awaitable[Sequence[Sequence[float]]]]
RETRY_AFTER_S = 60.0


class DenseBackground:
    """Probe vectors per passage encoder, embedded on first need and kept for the app's life.

    Only collections whose rows an encoder embedded as text passages get one (the encoder
    registry says which: a multimodal model's picture rows have none, since in its space text
    sits far closer to text than to any picture). A failed embedding (an endpoint down) is
    tried again after ``retry_after_s``; meanwhile the lists keep their own background.
    """

    def __init__(self, encoders: EncoderRegistry, *, retry_after_s: float = RETRY_AFTER_S) -> None:
        self._encoders = encoders
        self._retry_after_s = retry_after_s
        self._probes: dict[str, asyncio.Future[np.ndarray | None]] = {}
        self._retry_at: dict[str, float] = {}

    def passage_encoder(self, collection: str) -> str | None:
        """The encoder to embed the probes with for ``collection``; None: it has no text rows."""
        return self._encoders.passage_encoder_for(collection)

    async def for_short_list(
        self,
        encoder: str,
        query: Sequence[float],
        hits: int,
        head: int,
        embed: EmbedPassages,
    ) -> float | None:
        """The background of a dense list of ``hits`` rows when it is shorter than its ``head``
        (it ran out of rows: its last hit is evidence, no background); None for a full or
        empty list, which keeps its own."""
        if not 0 < hits < head:
            return None
        return await self.level(encoder, query, embed)

    async def level(
        self, encoder: str, query: Sequence[float], embed: EmbedPassages
    ) -> float | None:
        """The query's background cosine against ``encoder``'s probes; None while they cannot
        be had (the list then keeps its own)."""
        probes = await self._embedded_probes(encoder, embed)
        if probes is None:
            return None
        vector = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0 or probes.shape[1] != vector.shape[0]:
            return None
        return float(np.quantile(probes @ (vector / norm), BACKGROUND_QUANTILE))

    async def _embedded_probes(self, encoder: str, embed: EmbedPassages) -> np.ndarray | None:
        if time.monotonic() < self._retry_at.get(encoder, 0.0):
            return None
        future = self._probes.get(encoder)
        if future is None:
            future = asyncio.ensure_future(_embedded(encoder, embed))
            self._probes[encoder] = future
        try:
            # Shielded: a search cancelled while it waits does not cancel the embedding that
            # other searches wait for too.
            probes = await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.cancelled():
                raise  # this search was cancelled, not the embedding
            probes = None
        if probes is None and self._probes.get(encoder) is future:
            del self._probes[encoder]
            self._retry_at[encoder] = time.monotonic() + self._retry_after_s
        return probes


async def _embedded(encoder: str, embed: EmbedPassages) -> np.ndarray | None:
    try:
        vectors = np.asarray(await embed(PROBES), dtype=np.float32)
    except Exception as exc:  # no background is the old behaviour, never a failed search
        log.warning("no dense background for encoder %r yet: %s", encoder, exc)
        return None
    if vectors.ndim != 2 or len(vectors) != len(PROBES):
        log.warning("no dense background for encoder %r: it returned %s", encoder, vectors.shape)
        return None
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


def dense_background(
    config: RetrievalSettings, encoders: EncoderRegistry | None
) -> DenseBackground | None:
    """The background an orchestrator gets from ``retrieval.*``: none when the setting is off,
    under RRF (which reads no relevance from scores), or without an encoder registry."""
    if not config.short_list_background or config.hybrid_fusion != "normalized" or not encoders:
        return None
    return DenseBackground(encoders)
