"""The context pack: what a search returns to an agent, a UI or the generation engine."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from eagle_rag.plugins.payloads import QueryRouteDecision

StepStatus = Literal["ok", "skipped", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Step:
    """One stage of a search as it ran: what it did, or why it was skipped or degraded."""

    name: str
    status: StepStatus
    detail: str = ""
    ms: float = 0.0


class StepLog:
    """Collects steps in order; ``since`` gives each step its wall time."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.items: list[Step] = []

    def now(self) -> float:
        return self._clock()

    def add(
        self,
        name: str,
        status: StepStatus,
        detail: str = "",
        *,
        since: float | None = None,
        ms: float | None = None,
    ) -> None:
        """Record a step; its time is ``ms``, or the time elapsed ``since`` a clock reading."""
        if ms is None:
            ms = 0.0 if since is None else (self._clock() - since) * 1000
        self.items.append(Step(name, status, detail, round(ms, 2)))

    def extend(self, steps: Sequence[Step]) -> None:
        self.items.extend(steps)


@dataclass(frozen=True, slots=True)
class Passage:
    """One piece of evidence, cited as ``[citation]``, with every stage's score kept apart."""

    citation: int
    chunk_id: str
    text: str
    path: str
    page_nums: tuple[int, ...]
    document_id: str
    filename: str
    kb_name: str
    collection: str
    type: str
    score: float
    scores: Mapping[str, float] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    truncated: bool = False  # its text was cut to fit a token budget


@dataclass(frozen=True, slots=True)
class ContextPack:
    """Ranked passages plus how they were found (route decision and steps)."""

    query: str
    passages: tuple[Passage, ...]
    route: QueryRouteDecision | None
    steps: tuple[Step, ...]
    kb_names: tuple[str, ...] = ()
    token_count: int | None = None
    truncated: bool = False

    def route_dict(self) -> dict[str, Any] | None:
        if self.route is None:
            return None
        return {
            "classifier": self.route.classifier,
            "reason": self.route.reason,
            "plans": [
                {
                    "collection": p.collection,
                    "encoder": p.encoder,
                    "top_k": p.top_k,
                    "hybrid": p.hybrid,
                    "reason": p.reason,
                }
                for p in self.route.plans
            ],
        }


def trim_to_budget(
    passages: Sequence[Passage], budget: int, count_tokens: Callable[[str], int]
) -> tuple[tuple[Passage, ...], int, bool]:
    """Keep the best-ranked prefix that fits ``budget`` tokens.

    The prefix keeps rank order meaningful (never a lower passage instead of a higher one). If
    even the first passage does not fit, its text is cut to the budget (and marked truncated);
    a budget too small for any of its text (a tokenizer counts its special tokens even for no
    text) leaves no passage: an empty passage over budget was kept. Returns (passages, tokens
    used, whether anything was cut or left out).
    """
    kept: list[Passage] = []
    used = 0
    for passage in passages:
        tokens = count_tokens(passage.text)
        if used + tokens > budget:
            if not kept:
                return _first_cut(passage, budget, count_tokens)
            return tuple(kept), used, True
        kept.append(passage)
        used += tokens
    return tuple(kept), used, False


def _first_cut(
    passage: Passage, budget: int, count_tokens: Callable[[str], int]
) -> tuple[tuple[Passage, ...], int, bool]:
    """The first passage cut to the budget, or none when nothing of its text fits."""
    text = _cut(passage.text, budget, count_tokens)
    tokens = count_tokens(text)
    if not text.strip() or tokens > budget:
        return (), 0, True
    return (replace(passage, text=text, truncated=True),), tokens, True


def _cut(text: str, budget: int, count_tokens: Callable[[str], int]) -> str:
    """The longest prefix of ``text`` (at a word boundary when possible) within ``budget``."""
    low, high = 0, len(text)
    while low < high:  # binary search on characters: token counts grow with length
        middle = (low + high + 1) // 2
        if count_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    prefix = text[:low]
    space = prefix.rfind(" ")
    return prefix[:space] if space > low // 2 else prefix
