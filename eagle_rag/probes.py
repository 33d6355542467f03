"""Backend probes: does each configured backend answer, and which version is it?

Used by ``eagle-rag doctor`` now and by ``/health`` later. A probe never raises: it reports.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from eagle_rag.settings import Settings, database_backend, mask_url_password

ProbeStatus = Literal["ok", "down", "disabled"]


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One backend's answer: status, what it is, its version and how long the check took."""

    name: str
    status: ProbeStatus
    target: str
    detail: str = ""
    version: str = ""
    latency_ms: float = 0.0


def _timed(name: str, target: str, check: Callable[[], str]) -> ProbeResult:
    started = time.perf_counter()
    try:
        version = check()
    except Exception as exc:  # a probe reports; it never raises
        elapsed = (time.perf_counter() - started) * 1000
        return ProbeResult(name, "down", target, f"{type(exc).__name__}: {exc}", "", elapsed)
    elapsed = (time.perf_counter() - started) * 1000
    return ProbeResult(name, "ok", target, "", version, elapsed)


def probe_data_dir(settings: Settings) -> ProbeResult:
    """The data directory exists (or can be created) and is writable."""

    def check() -> str:
        directory = Path(settings.data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            pass
        return ""

    return _timed("data_dir", str(settings.data_dir), check)


def probe_database(settings: Settings) -> ProbeResult:
    """The metadata database accepts a connection and a trivial query."""
    url = settings.database.url

    def check() -> str:
        from sqlalchemy import create_engine, text

        if database_backend(url) == "sqlite":
            Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args=_connect_timeout(url))
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
                info = engine.dialect.server_version_info or ()
                return f"{engine.dialect.name} {'.'.join(str(p) for p in info)}".strip()
        finally:
            engine.dispose()

    return _timed("metadata_db", mask_url_password(url), check)


def _connect_timeout(url: str) -> dict[str, int]:
    return {"connect_timeout": 3} if database_backend(url) == "postgresql" else {}


def probe_redis(settings: Settings) -> ProbeResult:
    """Redis answers PING (only when a configured feature uses it)."""
    url = settings.telemetry.redis_url
    if not settings.telemetry.plugin_audit_redis_enabled:
        return ProbeResult("redis", "disabled", mask_url_password(url), "not used by this profile")

    def check() -> str:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        try:
            client.ping()
            return f"redis {client.info('server').get('redis_version', '?')}"
        finally:
            client.close()

    return _timed("redis", mask_url_password(url), check)


def probe_all(settings: Settings) -> list[ProbeResult]:
    """Every backend the settings configure, in a stable order."""
    return [probe_data_dir(settings), probe_database(settings), probe_redis(settings)]
