"""Prometheus metrics: request latency, search and answer counts, ingest, queue, hooks, audit.

One registry per app (not the process-global default), so tests and several apps in one
process never collide. What already lives elsewhere is read when ``/metrics`` is scraped rather
than double-booked: tasks, documents, chunks and bytes from the catalog (so every API process of
a deployment reports the same totals), the broker's queue length from Redis, MCP calls from
their log. The middleware also gives every request an id (``X-Request-ID``, accepted from
the caller when well-formed) that the structured logs carry, opens the request's span (continuing
a caller's ``traceparent``), and writes one access line. Ingest phase durations, model-call
latency, hook calls and audited decisions are counted as they happen by the app's one
:class:`eagle_rag.stage_metrics.StageMetrics` (this process only), which this registry serves:
an EagleApp that several API apps share counts each stage once, and keeps none of them alive.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from sqlalchemy import func, select
from starlette.requests import Request
from starlette.responses import Response

from eagle_rag.db.tables import DocumentRow, McpCallRow
from eagle_rag.logs import bound
from eagle_rag.stage_metrics import StageMetrics
from eagle_rag.tracing import Tracing

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID = re.compile(r"^[\w.:-]{1,64}$")
SEARCH_ROUTES = {"/search": "rest", "/search/stream": "stream"}
ANSWER_ROUTES = {"/query": "rest", "/query/stream": "stream"}
CELERY_QUEUE = "eagle_rag_ingest"

access_log = logging.getLogger("eagle_rag.access")


class Metrics:
    """The API app's Prometheus registry (serving the EagleApp's stage metrics too) and its
    request middleware."""

    def __init__(self, stages: StageMetrics, tracing: Tracing | None = None) -> None:
        self.registry = CollectorRegistry()
        self.tracing = tracing or Tracing.off()
        self._declare_requests()
        self._declare_catalog()
        self._declare_plugins()
        for collector in stages.collectors():  # the app's own: observed once, whoever serves
            self.registry.register(collector)

    def _declare_requests(self) -> None:
        registry, labels = self.registry, ["method", "route", "status"]
        self.latency = Histogram(
            "eagle_http_request_seconds",
            "HTTP request latency by route template and status class",
            labels,
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.requests = Counter("eagle_http_requests", "HTTP requests", labels, registry=registry)
        self.searches = Counter(
            "eagle_searches", "Searches served over REST", ["surface", "status"], registry=registry
        )
        self.answers = Counter(
            "eagle_answers", "Answers served over REST", ["surface", "status"], registry=registry
        )

    def _declare_catalog(self) -> None:
        registry = self.registry
        self.tasks = Gauge(
            "eagle_ingest_tasks", "Ingest tasks by status", ["status"], registry=registry
        )
        self.queue_depth = Gauge(
            "eagle_ingest_queue_depth",
            "Ingest tasks accepted and not started yet (the catalog's queued tasks)",
            registry=registry,
        )
        self.broker_depth = Gauge(
            "eagle_broker_queue_length",
            "Messages waiting in the Celery broker's ingest queue (production queue only)",
            registry=registry,
        )
        self.documents = Gauge(
            "eagle_ingest_documents", "Documents by status", ["status"], registry=registry
        )
        self.chunks = Gauge(
            "eagle_ingest_chunks", "Chunks of completed documents", registry=registry
        )
        self.bytes = Gauge(
            "eagle_ingest_bytes", "Original bytes of completed documents", registry=registry
        )

    def _declare_plugins(self) -> None:
        registry = self.registry
        self.mcp_calls = Gauge(
            "eagle_mcp_calls",
            "Logged MCP tool calls by tool and status",
            ["tool", "status"],
            registry=registry,
        )
        self.audit = Gauge(
            "eagle_audit_decisions",
            "Audited plugin decisions by category",
            ["category"],
            registry=registry,
        )
        self.audit_sink_errors = Gauge(
            "eagle_audit_sink_errors", "Audit sink write failures", ["sink"], registry=registry
        )

    # --- per request ----------------------------------------------------------------------------

    async def middleware(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
        caller = propagate.extract(request.headers)  # a caller's traceparent continues its trace
        with bound(request=request_id), self.tracing.span("request", parent=caller) as span:
            response = await call_next(request)
            elapsed = time.perf_counter() - started
            template = getattr(request.scope.get("route"), "path", "unmatched")
            self._count(request.method, template, response.status_code, elapsed)
            _describe_span(span, request, template, response.status_code, request_id)
            response.headers[REQUEST_ID_HEADER] = request_id
            access_log.info(
                "%s %s %s",
                request.method,
                template,
                response.status_code,
                extra={
                    "method": request.method,
                    "route": template,
                    "status": response.status_code,
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )
        return response

    def _count(self, method: str, template: str, code: int, elapsed: float) -> None:
        status = f"{code // 100}xx"
        self.latency.labels(method, template, status).observe(elapsed)
        self.requests.labels(method, template, status).inc()
        if template in SEARCH_ROUTES:
            self.searches.labels(SEARCH_ROUTES[template], status).inc()
        if template in ANSWER_ROUTES:
            self.answers.labels(ANSWER_ROUTES[template], status).inc()

    # --- at scrape time -------------------------------------------------------------------------

    def render(self, app: Runtime) -> Response:
        tasks = app.repositories.tasks.count_by_status()
        _set(self.tasks, tasks)
        self.queue_depth.set(tasks.get("queued", 0))
        self._catalog(app)
        self._broker(app)
        stats = app.audit.stats()
        _set(self.audit, stats["decisions_by_category"])
        _set(self.audit_sink_errors, stats["sink_errors"])
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE)

    def _catalog(self, app: Runtime) -> None:
        namespace = app.namespace
        documents = (
            select(
                DocumentRow.status,
                func.count(),
                func.coalesce(func.sum(DocumentRow.chunk_count), 0),
                func.coalesce(func.sum(DocumentRow.size), 0),
            )
            .where(DocumentRow.plugin_namespace == namespace)
            .group_by(DocumentRow.status)
        )
        calls = (
            select(McpCallRow.tool, McpCallRow.status, func.count())
            .where(McpCallRow.plugin_namespace == namespace)
            .group_by(McpCallRow.tool, McpCallRow.status)
        )
        with app.database.engine.connect() as connection:
            rows = list(connection.execute(documents))
            mcp = list(connection.execute(calls))
        _set(self.documents, {status: count for status, count, _, _ in rows})
        completed = [row for row in rows if row[0] == "completed"]
        self.chunks.set(sum(int(row[2]) for row in completed))
        self.bytes.set(sum(int(row[3]) for row in completed))
        self.mcp_calls.clear()
        for tool, status, count in mcp:
            self.mcp_calls.labels(tool, status).set(count)

    def _broker(self, app: Runtime) -> None:
        if app.settings.queue.backend != "celery":
            return
        import redis

        client = redis.Redis.from_url(
            app.settings.queue.broker_url, socket_timeout=0.5, socket_connect_timeout=0.5
        )
        try:
            self.broker_depth.set(int(client.llen(CELERY_QUEUE)))
        except redis.RedisError:
            pass  # the broker's health is /health's business; the gauge keeps its last value
        finally:
            client.close()


def _describe_span(
    span: trace.Span, request: Request, template: str, code: int, request_id: str
) -> None:
    """Name the request's span by its route template, with the HTTP semantic attributes."""
    if not span.is_recording():
        return
    span.update_name(f"{request.method} {template}")
    span.set_attributes(
        {
            "http.request.method": request.method,
            "http.route": template,
            "http.response.status_code": code,
            "eagle.request_id": request_id,
        }
    )
    if code >= 500:
        span.set_status(trace.StatusCode.ERROR)


def _set(gauge: Gauge, values: dict[str, Any]) -> None:
    gauge.clear()  # a status that has no rows any more must not keep its old value
    for label, value in values.items():
        gauge.labels(label).set(value)
