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
from eagle_rag.logs import install_celery_logging
from eagle_rag.settings import load_settings

settings = load_settings(os.environ)
install_celery_logging(settings)  # JSON lines with task ids, secrets redacted (telemetry.*)
celery = make_celery(settings.queue.broker_url)
_app: Any = None


async def _run(task_id: str) -> str:
    global _app
    from eagle_rag.bootstrap import bootstrap
    from eagle_rag.ingest.pipeline import IngestPipeline

    if _app is None:
        _app = await bootstrap(settings, start_queue=False)
    result = await IngestPipeline(_app).run(task_id)
    await asyncio.to_thread(_app.vectors.flush)
    return result.status


@celery.task(name=TASK_NAME)  # type: ignore[untyped-decorator]
def run_ingest(task_id: str) -> str:
    return asyncio.run(_run(task_id))
