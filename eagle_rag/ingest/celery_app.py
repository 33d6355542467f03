"""Celery on Redis: the production queue (the worker side is eagle_rag/ingest/worker.py).

Recording a task and sending it to the broker are two steps: an API process that dies between
them (or a broker that refuses the message) leaves a row no worker will ever receive. So a task
is recorded with a *send lease*: no owner (any worker may claim it) and an expiry
``send_grace_s`` ahead. Once the broker has the message the lease is dropped (the broker holds
the task now); a row whose send lease expired was never handed over, and the workers' recovery
loop re-sends it (leases.py). A duplicate delivery is harmless: the claim skips it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from celery import Celery

if TYPE_CHECKING:
    from eagle_rag.settings import Settings

logger = logging.getLogger(__name__)

TASK_NAME = "eagle_rag.ingest.run"


# Redis hands an unacknowledged message out again after this long. Recovery does not wait for
# it (a lost worker's task is re-sent once its lease is stranded, see leases.py); it is the
# backstop, and a redelivered copy of a task that completed or is held is skipped.
VISIBILITY_TIMEOUT_S = 15 * 60
# A send to a broker that is down gives up after about a second: the task stays recorded under
# its send lease and recovery sends it later, so the upload need not wait for the broker.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}


def make_celery(broker_url: str) -> Celery:
    app = Celery("eagle_rag", broker=broker_url, backend=None)
    app.conf.update(
        task_acks_late=True,  # at-least-once: a crashed worker's task is delivered again
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # with late acks: a worker reserves only what it runs
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        task_default_queue="eagle_rag_ingest",
        broker_connection_retry_on_startup=True,
        task_publish_retry_policy=PUBLISH_RETRY,
        broker_connection_timeout=2,
    )
    return app


async def plugin_task_modules(settings: Settings) -> tuple[str, ...]:
    """The modules the enabled plugins name in CELERY_TASKS, for the worker to import before it
    consumes. The plugins must load to say them, so an app is started and stopped for it; a
    name that cannot be imported stops that start (PluginLoadError names the plugin)."""
    from eagle_rag.bootstrap import bootstrap  # the app's assembly imports this module

    app = await bootstrap(settings, start_queue=False)
    try:
        return app.plugins.celery_modules
    finally:
        await app.stop()


class BrokerHandOff(Protocol):
    """Where the queue records that the broker holds a task (TaskRepository.hand_to_broker)."""

    def hand_to_broker(self, task_id: str) -> bool: ...


class CeleryQueue:
    """Submits task ids to the broker; a worker process runs them (and puts leases on them).

    ``owner`` None and ``lease_s`` the send grace: a new task's row is recorded claimable by any
    worker, with an expiry that recovery acts on if the send never happens (module docstring).
    """

    owner: str | None = None

    def __init__(
        self, broker_url: str, *, tasks: BrokerHandOff | None = None, send_grace_s: float = 30.0
    ) -> None:
        self._celery = make_celery(broker_url)
        self._tasks = tasks
        self.lease_s: float | None = send_grace_s if tasks is not None else None

    def submit(self, task_id: str) -> None:
        """Send the task; on success drop its send lease. A broker that does not take the
        message leaves the task recorded for recovery to send (a warning, not an error: the
        upload is safe in the database and the object store)."""
        try:
            self._celery.send_task(TASK_NAME, args=[task_id])
        except Exception as exc:
            if self._tasks is None:
                raise
            logger.warning("the broker did not take task %s (recovery sends it): %s", task_id, exc)
            return
        if self._tasks is not None:
            _hand_off(self._tasks, task_id)


def _hand_off(tasks: BrokerHandOff, task_id: str) -> None:
    try:
        tasks.hand_to_broker(task_id)
    except Exception as exc:  # the send lease stays: recovery re-sends once (harmless)
        logger.warning("could not record that the broker holds task %s: %s", task_id, exc)
