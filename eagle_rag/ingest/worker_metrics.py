"""A Celery worker's own Prometheus endpoint (``worker.metrics_port``; 0 = off).

What a worker does -- ingest phases, embedder calls, hook calls, completed documents -- is
counted by its app's StageMetrics, in the process that runs the task. With the prefork pool
(Celery's default) that is a child process, which the main process forks at start and replaces
when it dies or reaches ``--max-tasks-per-child``. Serving from each child would need a port
per child that a fixed scrape config cannot know, and a replaced child's counts would vanish.
So the worker uses prometheus_client's multiprocess mode: every process of the worker writes
its values to memory-mapped files in the worker's own directory, and the main process serves
their sum on one port. A replaced child's files stay, so counters never go backwards while the
worker lives; the directory is emptied at start, so they restart with the worker (which
Prometheus reads as a counter reset). The solo pool takes the same path with one process.

The mode must be chosen before the process constructs a metric that should be shared:
:func:`enable` runs in Celery's main process at ``worker_init`` (worker.py), before the pool
forks and before the app (and its StageMetrics) is built on the first task. Gauges are not
used here, so a dead child's files need no ``mark_process_dead``: its counts are kept.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server, values
from prometheus_client.multiprocess import MultiProcessCollector

from eagle_rag.errors import SettingsError
from eagle_rag.settings import WorkerSettings

logger = logging.getLogger(__name__)
MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


@dataclass
class WorkerMetrics:
    """The worker's multiprocess directory and, once serving, its HTTP server."""

    config: WorkerSettings
    directory: Path
    temporary: bool
    server: WSGIServer | None = None
    _thread: threading.Thread | None = None
    _serving_pid: int = 0

    def serve(self) -> None:
        """Listen on ``worker.metrics_port`` (the main process); a taken port is a clear error."""
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(self.directory))  # type: ignore[no-untyped-call]
        host, port = self.config.metrics_host, self.config.metrics_port
        try:
            self.server, self._thread = start_http_server(port, addr=host, registry=registry)
            self._serving_pid = os.getpid()
        except OSError as exc:
            raise SettingsError(
                f"worker.metrics_port: cannot listen on {host}:{port} ({exc.strerror or exc}); "
                "give each worker on a host its own port (EAGLE_WORKER_METRICS_PORT)",
                setting="worker.metrics_port",
            ) from exc
        logger.info("worker metrics on http://%s:%d/metrics", host, self.port)

    @property
    def port(self) -> int:
        """The port served; 0 when not serving."""
        return int(self.server.server_port) if self.server is not None else 0

    def forget_listener(self) -> None:
        """In a forked child: close the inherited copy of the listening socket (the parent
        keeps serving; a child holding it would keep the port bound after the parent died).
        The solo pool signals its own, serving process too: that one keeps its socket."""
        if self.server is not None and os.getpid() != self._serving_pid:
            self.server.socket.close()
            self.server = None

    def stop(self) -> None:
        """Stop serving and remove a temporary directory (the main process, at shutdown)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        if self.temporary:
            shutil.rmtree(self.directory, ignore_errors=True)


def enable(config: WorkerSettings) -> WorkerMetrics | None:
    """Switch this process, and the children it forks from now on, to multiprocess metrics in
    the worker's own directory; None when ``worker.metrics_port`` is 0."""
    if config.metrics_port == 0:
        return None
    temporary = not config.metrics_dir
    directory = Path(config.metrics_dir or tempfile.mkdtemp(prefix="eagle-worker-metrics-"))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):  # a previous run of this worker: counters restart
            stale.unlink()
    except OSError as exc:
        raise SettingsError(
            f"worker.metrics_dir: cannot use {str(directory)!r} for the worker's metric files "
            f"({exc.strerror or exc})",
            setting="worker.metrics_dir",
        ) from exc
    os.environ[MULTIPROC_VARIABLE] = str(directory)  # where each process writes its file
    # prometheus_client picks its value class when first imported; it may already be loaded
    # (by a library), so the class is set here too. Metrics constructed from now on share.
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    return WorkerMetrics(config, directory, temporary)
