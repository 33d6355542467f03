"""Celery on Redis: the production queue (the worker side is eagle_rag/ingest/worker.py)."""

from __future__ import annotations

from celery import Celery

TASK_NAME = "eagle_rag.ingest.run"


def make_celery(broker_url: str) -> Celery:
    app = Celery("eagle_rag", broker=broker_url, backend=None)
    app.conf.update(
        task_acks_late=True,  # at-least-once: a crashed worker's task is delivered again
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue="eagle_rag_ingest",
        broker_connection_retry_on_startup=True,
    )
    return app


class CeleryQueue:
    """Submits task ids to the broker; a worker process runs them."""

    def __init__(self, broker_url: str) -> None:
        self._celery = make_celery(broker_url)

    def submit(self, task_id: str) -> None:
        self._celery.send_task(TASK_NAME, args=[task_id])
