"""Backend probes: does each configured backend answer, and which version is it?

Used by ``eagle-rag doctor`` now and by ``/health`` later. A probe never raises: it reports. Probes
only read: they neither migrate the schema nor create collections.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from eagle_rag.db.database import Database
from eagle_rag.errors import EagleError
from eagle_rag.index.factory import build_pool
from eagle_rag.logs import redact
from eagle_rag.plugins.contract import milvus_database_for
from eagle_rag.settings import Settings, mask_url_password
from eagle_rag.storage.factory import build_object_store

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

# "in_use": a store only one process may open (Milvus Lite) is held by another one, most likely
# a running server: not down, but not checked from here either.
ProbeStatus = Literal["ok", "in_use", "down", "disabled"]
IN_USE_DETAIL = "in use by another process (a running server?)"


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One backend's answer: status, what it is, its version and how long the check took."""

    name: str
    status: ProbeStatus
    target: str
    detail: str = ""
    version: str = ""
    latency_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "latency_ms": round(self.latency_ms, 2)}


def _timed(name: str, target: str, check: Callable[[], str]) -> ProbeResult:
    started = time.perf_counter()
    try:
        version = check()
    except Exception as exc:  # a probe reports; it never raises
        elapsed = (time.perf_counter() - started) * 1000
        if isinstance(exc, EagleError) and exc.fields.get("in_use"):
            return ProbeResult(name, "in_use", target, IN_USE_DETAIL, "", elapsed)
        # Masked: a driver's message can quote the URL it was given, password and all.
        detail = redact(f"{type(exc).__name__}: {exc}", ())
        return ProbeResult(name, "down", target, detail, "", elapsed)
    elapsed = (time.perf_counter() - started) * 1000
    return ProbeResult(name, "ok", target, "", version, elapsed)


# Below this much free space the data dir is reported down: an empty probe file still fits on a
# full disk, so /health said "ok" while every upload failed with "No space left on device".
MIN_FREE_BYTES = 64 * 1024 * 1024


def probe_data_dir(settings: Settings) -> ProbeResult:
    """The data directory exists (or can be created), is writable and has room."""

    def check() -> str:
        directory = Path(settings.data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            pass
        free = shutil.disk_usage(directory).free
        if free < MIN_FREE_BYTES:
            raise DiskFullError(
                f"only {_size(free)} free on its filesystem (under {_size(MIN_FREE_BYTES)}): "
                "uploads and ingest fail until space is freed"
            )
        return f"{_size(free)} free"

    return _timed("data_dir", str(settings.data_dir), check)


class DiskFullError(OSError):
    """The data dir's filesystem is (nearly) full."""


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def probe_database(settings: Settings) -> ProbeResult:
    """The metadata database answers; reports its version and schema revision."""
    url = settings.database.url

    def check() -> str:
        database = Database(url)
        try:
            if database.backend == "sqlite":
                Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
            version = database.health()
            try:
                revision = database.revision() or "empty"
            except Exception:
                revision = "not migrated"
            return f"{version}, schema {revision}{_pending_note(database)}"
        finally:
            database.dispose()

    return _timed("metadata_db", mask_url_password(url), check)


def _pending_note(database: Database) -> str:
    """What `eagle-rag db upgrade` (or the next start) would apply, if anything."""
    pending = database.pending()
    if not pending:
        return " (up to date)"
    count = f"{len(pending)} migration{'s' if len(pending) > 1 else ''}"
    return f", {count} pending ({', '.join(pending)}): run `eagle-rag db upgrade`"


def probe_milvus(settings: Settings) -> ProbeResult:
    """Milvus (Lite or server) answers; reports its version and the namespace's database."""
    config = settings.milvus
    db_name = config.db_name or milvus_database_for(settings.plugins.default_namespace)

    def check() -> str:
        pool = build_pool(config)
        try:
            client = pool.client("default")
            present = "present" if db_name in client.list_databases() else "not created yet"
            return f"{pool.server_version()}, database {db_name} {present}"
        finally:
            pool.close()

    return _timed("milvus", mask_url_password(config.uri), check)


def probe_object_store(settings: Settings) -> ProbeResult:
    store = build_object_store(settings)
    target = (
        settings.storage.local_dir
        if settings.storage.backend == "local"
        else f"{settings.storage.s3.endpoint_url or 's3'}/{settings.storage.s3.bucket}"
    )
    return _timed("object_store", target, store.health)


def probe_redis(settings: Settings) -> ProbeResult:
    """Redis answers PING (only when a configured feature uses it)."""
    url = settings.telemetry.redis_url
    if not settings.telemetry.plugin_audit_redis_enabled:
        return ProbeResult("redis", "disabled", mask_url_password(url), "not used by this profile")
    return _redis_ping("redis", url)


def probe_broker(settings: Settings) -> ProbeResult:
    """The Celery broker answers PING (only with the Celery ingest queue): uploads are only
    recorded while it is down, and no worker gets them."""
    url = settings.queue.broker_url
    if settings.queue.backend != "celery":
        return ProbeResult("broker", "disabled", mask_url_password(url), "the in-process queue")
    return _redis_ping("broker", url)


def probe_all(settings: Settings) -> list[ProbeResult]:
    """Every backend the settings configure, in a stable order (those of /health, which
    probe_running checks through a running app's own connections)."""
    return [
        probe_data_dir(settings),
        probe_database(settings),
        probe_milvus(settings),
        probe_object_store(settings),
        probe_broker(settings),
        probe_redis(settings),
        *probe_models(settings),
    ]


def probe_running(app: EagleApp) -> list[ProbeResult]:
    """Probe a running app through its own connections (Milvus Lite admits one opener)."""
    settings = app.settings
    results = [
        probe_data_dir(settings),
        _timed("metadata_db", mask_url_password(settings.database.url), app.database.health),
        _timed("milvus", mask_url_password(settings.milvus.uri), app.vectors.health),
        _timed("object_store", settings.storage.backend, app.objects.health),
    ]
    health = getattr(app.queue, "health", None)
    if health is not None:
        results.append(_timed("ingest_queue", settings.queue.backend, health))
    results += probe_models(settings)
    if settings.queue.backend == "celery":
        results.append(probe_broker(settings))
    if settings.telemetry.plugin_audit_redis_enabled:
        results.append(_redis_ping("redis", settings.telemetry.redis_url))
    return results


def probe_models(settings: Settings) -> list[ProbeResult]:
    """Remote model endpoints (embedder, reranker, chat model): does their host accept a
    connection? Only a TCP connect within a second: no request that a provider bills."""
    models = settings.models
    endpoints = [
        ("embedder", models.embedding.base_url if models.embedding.provider == "openai" else ""),
        ("reranker", models.rerank.url if models.rerank.provider == "http" else ""),
        ("chat", models.chat.base_url if models.chat.provider == "openai" else ""),
    ]
    return [
        _timed(name, mask_url_password(url), functools.partial(_connect, url))
        for name, url in endpoints
        if url
    ]


def _connect(url: str) -> str:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    with socket.create_connection((parts.hostname or "", port), timeout=1.0):
        return f"reachable ({parts.hostname}:{port})"


def _redis_ping(name: str, url: str) -> ProbeResult:
    def check() -> str:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        try:
            client.ping()
            return f"redis {client.info('server').get('redis_version', '?')}"
        finally:
            client.close()

    return _timed(name, mask_url_password(url), check)


# Without these the service cannot answer at all; anything else down only degrades it.
CRITICAL_PROBES = frozenset({"metadata_db", "milvus"})


def overall_status(results: list[ProbeResult]) -> str:
    """``ok``, ``degraded`` (a non-critical backend is down) or ``down``."""
    failing = {r.name for r in results if r.status == "down"}
    if failing & CRITICAL_PROBES:
        return "down"
    return "degraded" if failing else "ok"
