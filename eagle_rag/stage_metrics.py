"""Prometheus metrics of the work one app does: ingest phases, model and hook calls, decisions,
completed ingests.

One :class:`StageMetrics` per app (``bootstrap.build_runtime`` makes it and attaches it once, as
the tracing's timing observer and as an audit sink), so however many API apps are built on one
EagleApp, each stage is counted once and a dropped API app is not kept alive by the EagleApp.
Its metric objects belong to no registry: whoever serves them registers them -- the API's
``/metrics`` registry (eagle_rag/api/metrics.py), or nothing at all in a Celery worker, whose
endpoint reads the multiprocess files these values are written to (worker_metrics.py).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from eagle_rag.plugins.audit import AuditDecision
from eagle_rag.tracing import Timing

# Phases and model calls: a millisecond hook to a minute-long parse or chat answer.
STAGE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class StageMetrics:
    """Counters and histograms fed by stage timings, audited decisions and the pipeline's
    completed ingests, as they happen."""

    name = "metrics"  # as an audit sink

    def __init__(self) -> None:
        self.phases = Histogram(
            "eagle_ingest_phase_seconds",
            "Time in each ingest phase of a document, and the whole ingest (this process)",
            ["phase", "outcome"],
            registry=None,
            buckets=STAGE_BUCKETS,
        )
        self.model_calls = Histogram(
            "eagle_model_call_seconds",
            "Embedder, reranker and chat model call latency (this process)",
            ["model", "outcome"],
            registry=None,
            buckets=STAGE_BUCKETS,
        )
        self.model_errors = Counter(
            "eagle_model_call_errors",
            "Embedder, reranker and chat model calls that raised (this process)",
            ["model"],
            registry=None,
        )
        self.hook_calls = Counter(
            "eagle_hook_calls",
            "Hook subscriber calls by plugin, hook and outcome (this process; not CLASSIFY_*)",
            ["plugin", "hook", "outcome"],
            registry=None,
        )
        self._declare_decisions()
        self._declare_ingested()

    def _declare_ingested(self) -> None:
        self.documents = Counter(
            "eagle_ingested_documents",
            "Documents this process ingested to completion",
            registry=None,
        )
        self.chunks = Counter(
            "eagle_ingested_chunks",
            "Vectors written by completed ingests (this process)",
            registry=None,
        )
        self.bytes = Counter(
            "eagle_ingested_bytes",
            "Original bytes of the documents this process ingested to completion",
            registry=None,
        )

    def _declare_decisions(self) -> None:
        self.decisions = Counter(
            "eagle_plugin_decisions",
            "Audited decisions by category, plugin and decision (this process)",
            ["category", "plugin", "decision"],
            registry=None,
        )
        self.hook_failures = Counter(
            "eagle_hook_failures",
            "Hook subscribers that failed and were skipped, by plugin and hook (this process)",
            ["plugin", "hook"],
            registry=None,
        )

    def collectors(self) -> tuple[Counter | Histogram, ...]:
        """Every metric, for a registry to serve."""
        return (
            self.phases,
            self.model_calls,
            self.model_errors,
            self.hook_calls,
            self.decisions,
            self.hook_failures,
            self.documents,
            self.chunks,
            self.bytes,
        )

    def ingested(self, chunks: int, size: int) -> None:
        """A document's ingest completed here with ``chunks`` vectors from ``size`` bytes."""
        self.documents.inc()
        self.chunks.inc(chunks)
        self.bytes.inc(size)

    # --- a timing observer of the app's Tracing -------------------------------------------------

    def observe(self, timing: Timing) -> None:
        outcome = timing.outcome  # ok, error; a whole ingest also skipped or stopped
        if timing.hook:
            self.hook_calls.labels(timing.plugin, timing.hook, outcome).inc()
        if timing.ingest:
            self.phases.labels(timing.stage, outcome).observe(timing.seconds)
        model = timing.model
        if model is not None:
            self.model_calls.labels(model, outcome).observe(timing.seconds)
            if timing.failed:
                self.model_errors.labels(model).inc()

    # --- an audit sink ----------------------------------------------------------------------------

    def write(self, decision: AuditDecision) -> None:
        self.decisions.labels(decision.category, decision.plugin, decision.decision).inc()
        if decision.category == "hook_failure":
            hook = str(decision.details.get("hook", "unknown"))
            self.hook_failures.labels(decision.plugin, hook).inc()
