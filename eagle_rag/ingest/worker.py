"""The Celery worker entry point: ``celery -A eagle_rag.ingest.worker worker``.

Celery finds its app as a module attribute, so this module (and only this one) builds settings and
the Celery app at import time. The worker bootstraps its own EagleApp from the same environment as
the API, on first task, and keeps it for the process's life.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from eagle_rag.ingest.celery_app import TASK_NAME, make_celery
from eagle_rag.settings import load_settings

settings = load_settings(os.environ)
celery = make_celery(settings.queue.broker_url)
_app: Any = None


async def _run(task_id: str) -> str:
    global _app
    from eagle_rag.bootstrap import bootstrap

    if _app is None:
        _app = await bootstrap(settings, start_queue=False)
    result = await _app.pipeline.run(task_id)
    await asyncio.to_thread(_app.vectors.flush)
    return str(result.status)


@celery.task(name=TASK_NAME)  # type: ignore[untyped-decorator]
def run_ingest(task_id: str) -> str:
    return asyncio.run(_run(task_id))
