"""Plugin audit: routing, classification and failure decisions, kept where operators look.

Sinks are best-effort by contract: ``log_decision`` never raises, whatever a sink does. A sink
that fails is counted in ``stats()`` and logged, and the hot path goes on.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AuditDecision:
    """One audited decision: what was decided, by which plugin, in which namespace."""

    category: str
    decision: str
    plugin: str
    namespace: str
    timestamp: float
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AuditSink(Protocol):
    """Where decisions go; ``write`` may raise, the audit log contains it."""

    name: str

    def write(self, decision: AuditDecision) -> None: ...


class MemoryRingSink:
    """The last ``cap`` decisions in memory; always on, so health has something to show."""

    name = "memory"

    def __init__(self, cap: int) -> None:
        self._ring: deque[AuditDecision] = deque(maxlen=max(1, cap))
        self._lock = threading.Lock()

    def write(self, decision: AuditDecision) -> None:
        with self._lock:
            self._ring.append(decision)

    def recent(self, limit: int) -> list[AuditDecision]:
        with self._lock:
            items = list(self._ring)
        return items[-limit:][::-1] if limit > 0 else []


class JsonlSink:
    """Appends one JSON object per decision to a file: the durable record."""

    name = "jsonl"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, decision: AuditDecision) -> None:
        line = json.dumps(
            {"event": "plugin_audit_decision", **decision.to_dict()},
            ensure_ascii=False,
            default=str,
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")


class RedisListSink:
    """Pushes decisions onto ``eagle:plugin_audit:{namespace}:recent``, trimmed to ``cap``.

    The key carries the namespace so instances that share one Redis stay apart.
    """

    name = "redis"

    def __init__(self, client: Any, cap: int) -> None:
        self._client = client
        self._cap = max(1, cap)

    @staticmethod
    def key(namespace: str) -> str:
        return f"eagle:plugin_audit:{namespace}:recent"

    def write(self, decision: AuditDecision) -> None:
        key = self.key(decision.namespace)
        payload = json.dumps(decision.to_dict(), ensure_ascii=False, default=str)
        pipe = self._client.pipeline()
        pipe.lpush(key, payload)
        pipe.ltrim(key, 0, self._cap - 1)
        pipe.execute()

    def recent(self, namespace: str, limit: int) -> list[AuditDecision]:
        raw = self._client.lrange(self.key(namespace), 0, max(0, limit - 1))
        return [AuditDecision(**json.loads(item)) for item in raw]


class PluginAudit:
    """Fans each decision out to its sinks and keeps counters for health and metrics."""

    def __init__(
        self,
        *,
        ring_cap: int,
        sinks: Iterable[AuditSink] = (),
        enabled: bool = True,
        clock: Any = time.time,
    ) -> None:
        self.enabled = enabled
        self.ring = MemoryRingSink(ring_cap)
        self._sinks: list[AuditSink] = [self.ring, *sinks]
        self._clock = clock
        self._counts: Counter[str] = Counter()
        self._sink_errors: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add_sink(self, sink: AuditSink) -> None:
        """Add a sink after construction (the app's stage metrics count decisions this way)."""
        self._sinks.append(sink)

    def log_decision(
        self,
        category: str,
        decision: str,
        *,
        plugin: str,
        namespace: str,
        **details: Any,
    ) -> None:
        """Record a decision in every sink; never raises."""
        if not self.enabled:
            return
        record = AuditDecision(category, decision, plugin, namespace, self._clock(), details)
        with self._lock:
            self._counts[category] += 1
        for sink in self._sinks:
            try:
                sink.write(record)
            except Exception as exc:  # a sink must never fail the caller
                with self._lock:
                    self._sink_errors[sink.name] += 1
                logger.warning("audit sink %s failed: %s", sink.name, exc)

    def recent(self, limit: int) -> list[AuditDecision]:
        """Newest first, from the memory ring."""
        return self.ring.recent(limit)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "enabled": self.enabled,
                "sinks": [sink.name for sink in self._sinks],
                "decisions_by_category": dict(self._counts),
                "sink_errors": dict(self._sink_errors),
            }
