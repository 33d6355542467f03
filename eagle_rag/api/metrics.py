"""Prometheus metrics: request latency, answers and search counts, ingest and hook health.

One registry per app (not the process-global default), so tests and several apps in one
process never collide. Counters that already live elsewhere (tasks, audit) are read when
``/metrics`` is scraped rather than double-booked.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "eagle_http_request_seconds",
            "HTTP request latency by route template and status class",
            ["method", "route", "status"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.requests = Counter(
            "eagle_http_requests",
            "HTTP requests",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.tasks = Gauge(
            "eagle_ingest_tasks", "Ingest tasks by status", ["status"], registry=self.registry
        )
        self.audit = Gauge(
            "eagle_audit_decisions",
            "Audited plugin decisions by category",
            ["category"],
            registry=self.registry,
        )

    async def middleware(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        template = getattr(route, "path", "unmatched")
        labels = (request.method, template, f"{response.status_code // 100}xx")
        self.latency.labels(*labels).observe(time.perf_counter() - started)
        self.requests.labels(*labels).inc()
        return response

    def render(self, app: Runtime) -> Response:
        for status, count in app.repositories.tasks.count_by_status().items():
            self.tasks.labels(status).set(count)
        for category, count in app.audit.stats()["decisions_by_category"].items():
            self.audit.labels(category).set(count)
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE)
