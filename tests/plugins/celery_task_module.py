"""A plugin's Celery task module: it registers a task on the worker's Celery app."""

from __future__ import annotations

from eagle_rag.ingest.worker import celery

TASK_NAME = "tests.plugins.celery_task_module.echo"


@celery.task(name=TASK_NAME)  # type: ignore[untyped-decorator]
def echo(value: str) -> str:
    return value
