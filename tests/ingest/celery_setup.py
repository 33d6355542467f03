"""The environment a production-queue test and its Celery worker process share (the worker
itself is the ``worker`` fixture of tests/ingest/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import redis


def celery_environment(
    tmp_path: Path, postgres_url: str, milvus_uri: str, broker: str, **extra: str
) -> dict[str, str]:
    """What the submitting test and its worker share: PostgreSQL, a Milvus server and a Redis
    broker database of the test module's own (emptied here), plus ``extra`` variables."""
    redis.Redis.from_url(broker).flushdb()
    return {
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_DATABASE_URL": postgres_url,
        "MILVUS_URI": milvus_uri,
        "EAGLE_RAG_QUEUE__BACKEND": "celery",
        "EAGLE_BROKER_URL": broker,
        "EAGLE_ENCODER_MODE": "deterministic",
        "PLUGIN_NAMESPACE": "core",
        **extra,
    }
