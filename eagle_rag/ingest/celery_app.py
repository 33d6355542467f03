"""Celery on Redis: the production queue (the worker side is eagle_rag/ingest/worker.py)."""

from __future__ import annotations

from celery import Celery

TASK_NAME = "eagle_rag.ingest.run"


# Redis hands an unacknowledged message out again after this long. Recovery does not wait for
# it (a lost worker's task is re-sent once its lease is stranded, see leases.py); it is the
# backstop, and a redelivered copy of a task that completed or is held is skipped.
VISIBILITY_TIMEOUT_S = 15 * 60


def make_celery(broker_url: str) -> Celery:
    app = Celery("eagle_rag", broker=broker_url, backend=None)
    app.conf.update(
        task_acks_late=True,  # at-least-once: a crashed worker's task is delivered again
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # with late acks: a worker reserves only what it runs
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        task_default_queue="eagle_rag_ingest",
        broker_connection_retry_on_startup=True,
    )
    return app


class CeleryQueue:
    """Submits task ids to the broker; a worker process runs them (and puts leases on them)."""

    owner: str | None = None  # queued tasks are the broker's: no lease until a worker claims
    lease_s: float | None = None

    def __init__(self, broker_url: str) -> None:
        self._celery = make_celery(broker_url)

    def submit(self, task_id: str) -> None:
        self._celery.send_task(TASK_NAME, args=[task_id])
