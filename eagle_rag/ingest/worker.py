"""The Celery worker entry point: ``celery -A eagle_rag.ingest.worker worker``.

Celery finds its app as a module attribute, so this module (and only this one) builds settings and
the Celery app at import time. The worker bootstraps its own EagleApp from the same environment as
the API, on first task, and keeps it for the process's life.

Reliability: messages are acknowledged late (a worker that dies mid-task leaves its message
unacknowledged), each task runs under a lease this process renews, and a recovery thread
re-sends every task whose lease is stranded (its worker died: same host and the process is gone,
or the lease expired) -- so a killed worker's task runs again as soon as any worker is up, well
before the broker's visibility timeout would hand the message out again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from celery.signals import (
    import_modules,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)

from eagle_rag.db.tables import utcnow
from eagle_rag.errors import SettingsError
from eagle_rag.ingest.celery_app import TASK_NAME, CeleryQueue, make_celery, plugin_task_modules
from eagle_rag.ingest.leases import Leases, ProcessOwner, heartbeat, transient
from eagle_rag.ingest.parsers.registry import warm_in_background
from eagle_rag.ingest.task_loop import TaskLoop
from eagle_rag.ingest.worker_metrics import WorkerMetrics
from eagle_rag.ingest.worker_metrics import enable as enable_metrics
from eagle_rag.logs import install_celery_logging
from eagle_rag.settings import load_settings

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

logger = logging.getLogger(__name__)
settings = load_settings(os.environ)
install_celery_logging(settings)  # JSON lines with task ids, secrets redacted (telemetry.*)
celery = make_celery(settings.queue.broker_url)
owner = ProcessOwner()  # per process: a prefork child gets its own
_app: EagleApp | None = None
_stop = threading.Event()
_metrics: WorkerMetrics | None = None  # worker.metrics_port: set in the main process at start
task_loop = TaskLoop()  # one event loop per process for all its tasks (task_loop.py)


def _leases(repos: Any) -> Leases:
    return Leases(repos.tasks, repos.ingest_runs, owner(), settings.ingest.lease_s)


class CoalescedFlush:
    """Flush the vector store at most every ``interval_s`` while tasks come, and once more when
    they stop (a worker never knows when the broker drains).

    A flush per task serialised the workers on the Milvus server (each flush seals segments
    there, one at a time), which capped what a second worker adds. A completed task stays
    ``vectors_flushed: false`` until the flush that covers it, as before.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._last = 0.0
        self._pending = False

    def task_done(self, app: EagleApp) -> None:
        with self._lock:
            self._pending = True
            due = time.monotonic() - self._last >= self.interval_s
        if due:
            self.flush(app)

    def flush(self, app: EagleApp) -> None:
        with self._lock:
            if not self._pending:
                return
            started = utcnow()
            app.vectors.flush()
            app.repositories.tasks.mark_flushed(before=started)
            self._last = time.monotonic()
            self._pending = False

    def idle_loop(self) -> None:
        """The worker's flush thread: what the last tasks wrote is flushed once they stop; and
        what a killed worker left half done is finished (every third of a lease)."""
        swept = time.monotonic()
        while not _stop.wait(self.interval_s):
            if _app is not None and time.monotonic() - self._last >= self.interval_s:
                try:
                    self.flush(_app)
                except Exception:  # the store may be down: the next round tries again
                    logger.exception("flushing the vector store failed")
            if _app is not None and time.monotonic() - swept >= settings.ingest.lease_s / 3:
                swept = time.monotonic()
                _finish_interrupted(_app)


flusher = CoalescedFlush(settings.worker.flush_interval_s)


async def _run(task_id: str) -> str:
    global _app
    from eagle_rag.bootstrap import bootstrap

    if _app is None:
        _app = await bootstrap(settings, start_queue=False)
        # The idle flush runs where the app is: in a prefork pool that is this child process,
        # not the main process that gets worker_ready.
        threading.Thread(target=flusher.idle_loop, name="eagle-flush", daemon=True).start()
        if settings.ingest.ocr_warm:  # this process reads scans from now on: load OCR now
            warm_in_background([r.component for r in _app.registries.parsers])
        await asyncio.to_thread(_finish_interrupted, _app)
    async with heartbeat(_leases(_app.repositories), task_id):
        result = await _app.pipeline.run(task_id, owner=owner())
        await asyncio.to_thread(flusher.task_done, _app)
    return str(result.status)


# The longest wait between two tries of a task whose claim met an outage (the first waits
# ingest.retry_backoff_s, each next one twice as long).
MAX_RETRY_DELAY_S = 60.0


def _finish_interrupted(app: EagleApp) -> None:
    """What a killed worker left half done (a re-upload's removal of the older version, a
    cancelled attempt's undo: durability.finish_interrupted); each worker process looks when
    its app starts and then every third of a lease (its flush thread)."""
    from eagle_rag.ingest.durability import finish_interrupted

    finish_interrupted(app, owner(), settings.ingest.lease_s)


@celery.task(name=TASK_NAME, bind=True, max_retries=None)  # type: ignore[untyped-decorator]
def run_ingest(self: Any, task_id: str) -> str:
    """Run the task; one that failed before the pipeline could record anything (the metadata
    database down at the claim or at the app's start) is sent again later, not acknowledged
    and lost: its row stays queued with no lease, which recovery only re-sends after
    ``leases.UNHELD_RESEND_S``. A failure the pipeline recorded never gets here (it re-queues
    the task itself); a duplicate delivery is skipped by the claim."""
    try:
        return task_loop.run(_run(task_id))
    except Exception as exc:
        if not transient(exc):
            raise
        delay = retry_delay(settings.ingest.retry_backoff_s, self.request.retries)
        logger.warning("task %s could not start, sent again in %g s: %s", task_id, delay, exc)
        raise self.retry(exc=exc, countdown=delay) from exc


def retry_delay(backoff_s: float, retries: int) -> float:
    """The wait before the next try: ``backoff_s`` doubling per try, at most MAX_RETRY_DELAY_S."""
    return min(MAX_RETRY_DELAY_S, backoff_s * 2.0 ** min(int(retries), 16))


def _recovery_loop() -> None:
    """Re-send stranded tasks to the broker, at start and every third of a lease."""
    from eagle_rag.db.database import Database
    from eagle_rag.db.repositories.bundle import Repositories

    database = Database(settings.database.url)
    repos = Repositories.for_namespace(database, settings.plugins.default_namespace)
    leases = _leases(repos)
    # Sends like the API does: a task the broker did not take keeps its send lease and comes
    # back on a later round; one it took is handed over (no second delivery).
    sender = CeleryQueue(
        settings.queue.broker_url, tasks=repos.tasks, send_grace_s=settings.ingest.lease_s
    )
    try:
        while not _stop.is_set():
            try:
                for task_id in leases.recover(hold=False):
                    sender.submit(task_id)
            except Exception:  # the database or broker may be down: try on the next round
                logger.exception("recovery of stranded ingest tasks failed")
            _stop.wait(leases.interval_s)
    finally:
        database.dispose()


@import_modules.connect  # type: ignore[untyped-decorator]
def _import_plugin_task_modules(**_: Any) -> None:
    """Add the plugins' CELERY_TASKS modules to what Celery imports as the worker starts (in
    the main process, before a pool forks). Celery re-raises this signal's errors, so a module
    that cannot be imported stops the worker, naming the plugin. Not at import: ``celery
    inspect ping`` imports this module too."""
    modules = asyncio.run(plugin_task_modules(settings))
    celery.conf.imports = (*tuple(celery.conf.imports or ()), *modules)
    if modules:
        logger.info("importing the plugins' Celery task modules: %s", ", ".join(modules))


@worker_init.connect  # type: ignore[untyped-decorator]
def _serve_metrics(**_: Any) -> None:
    """In the worker's main process, before the pool forks and before any app is built (so
    every process of this worker writes its metrics where this one serves them). Not at import:
    ``celery -A eagle_rag.ingest.worker inspect ping`` (a health check) imports this module too.
    A bad setting or a taken port is logged and the worker ingests on without an endpoint."""
    global _metrics
    try:
        _metrics = enable_metrics(settings.worker)
        if _metrics is not None:
            _metrics.serve()
    except SettingsError as exc:
        logger.error("worker metrics are off: %s", exc)


@worker_process_init.connect  # type: ignore[untyped-decorator]
def _child_metrics(**_: Any) -> None:
    if _metrics is not None:
        _metrics.forget_listener()  # a pool child only writes its files


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _stop_metrics(**_: Any) -> None:
    if _metrics is not None:
        _metrics.stop()


@worker_ready.connect  # type: ignore[untyped-decorator]
def _start_recovery(**_: Any) -> None:
    threading.Thread(target=_recovery_loop, name="eagle-recovery", daemon=True).start()


@worker_shutting_down.connect  # type: ignore[untyped-decorator]
def _stop_recovery(**_: Any) -> None:
    _stop.set()
    _final_flush()  # a solo pool: the app lives in this, the main, process


@worker_process_shutdown.connect  # type: ignore[untyped-decorator]
def _final_flush(**_: Any) -> None:
    """Flush what the last tasks wrote before the process that ran them goes (a prefork
    pool's child gets this signal, not worker_shutting_down)."""
    if _app is not None:
        try:
            flusher.flush(_app)  # what the last tasks wrote, before the process goes
        except Exception:
            logger.exception("the final flush of the vector store failed")
    task_loop.close()  # not while a task runs on it (a solo pool's signal handler)
