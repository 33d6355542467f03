"""One MilvusClient per Milvus Database, bound at construction (ADR-001).

Clients are never switched between databases per request (``using_database`` would race between
threads) and never closed while pooled. Milvus Lite is a local path; anything with a scheme is a
server reached by URI.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pymilvus import MilvusClient

from eagle_rag.errors import BackendUnavailableError, EagleError, SettingsError
from eagle_rag.logs import redact
from eagle_rag.settings import url_password


def is_lite(uri: str) -> bool:
    return "://" not in uri


# Milvus Lite holds an advisory flock on this file of its data dir while a process has it open.
LITE_LOCK_FILE = "LOCK"


def lite_data_dir_held(uri: str) -> bool:
    """Whether another process holds the Milvus Lite data dir ``uri`` open (a running serve,
    an MCP server over stdio): asked of the lock itself, without opening the store."""
    lock = Path(uri) / LITE_LOCK_FILE
    if not lock.is_file():
        return False
    try:
        import fcntl
    except ImportError:  # no flock on this platform: assume held, as the store may be
        return True
    try:
        with lock.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError:  # unreadable: let opening the store say why
        return False
    return False


# What pymilvus accepts: a server by one of these schemes, or a Milvus Lite file.
_SERVER_SCHEMES = ("http", "https", "tcp", "unix")


def check_uri(uri: str) -> None:
    """Refuse a milvus.uri pymilvus cannot use, before a Lite path's folder is made for it."""
    scheme = uri.partition("://")[0].lower()
    usable = uri.endswith(".db") if is_lite(uri) else scheme in _SERVER_SCHEMES
    if not usable:
        raise SettingsError(
            f"milvus.uri {masked(uri, uri)!r} is neither a Milvus server "
            "(http[s]://host:19530, tcp://, unix://) nor a Milvus Lite file (a path ending .db)"
        )


def masked(text: str, uri: str) -> str:
    """``text`` with the password of ``uri`` masked, also where the URI is malformed."""
    password = url_password(uri)
    return redact(text, [password] if password else [])


class MilvusClientPool:
    """Creates clients lazily (construction does no I/O) and the database on first use."""

    def __init__(self, uri: str, *, token: str = "", timeout: float = 30.0) -> None:
        self.uri = uri
        self._token = token
        self._timeout = timeout
        self._clients: dict[str, MilvusClient] = {}
        self._lock = threading.Lock()

    @property
    def lite(self) -> bool:
        return is_lite(self.uri)

    def client(self, db_name: str) -> MilvusClient:
        with self._lock:
            found = self._clients.get(db_name)
            if found is None:
                found = self._connect(db_name)
                self._clients[db_name] = found
            return found

    def _connect(self, db_name: str) -> MilvusClient:
        check_uri(self.uri)
        try:
            if self.lite:
                Path(self.uri).parent.mkdir(parents=True, exist_ok=True)
            root = self._clients.get("default") or self._open("default")
            self._clients.setdefault("default", root)
            if db_name == "default":
                return root
            if db_name not in root.list_databases():
                root.create_database(db_name)
            return self._open(db_name)
        except EagleError:
            raise
        except Exception as exc:
            raise _unavailable(self.uri, exc) from exc

    def _open(self, db_name: str) -> MilvusClient:
        kwargs: dict[str, Any] = {
            "uri": self.uri,
            "db_name": db_name,
            "timeout": self._timeout,
            # pymilvus pings every 10 s even with no call in flight; Milvus Lite's gRPC server
            # (the embedded one and `milvus-lite server`) answers an idle connection's pings
            # with GOAWAY "too_many_pings", after which the shared channel cannot reconnect
            # (seen on a 5,000-document ingest + migrate-store). Ping only while calls run.
            "grpc_options": {"grpc.keepalive_permit_without_calls": False},
        }
        if not self.lite:
            # pymilvus shares one channel per address between clients unless told otherwise; a
            # pool owns its channels, so one pool's broken channel cannot fail another's calls.
            # (A Lite data dir must stay shared: it admits one server per process.)
            kwargs["dedicated"] = True
        if self._token:
            kwargs["token"] = self._token
        with _lite_refusals() as refusals:
            try:
                return MilvusClient(**kwargs)
            except Exception as exc:
                cause = refusals.caught or exc
                raise _unavailable(self.uri, cause) from cause

    def server_version(self) -> str:
        return str(self.client("default").get_server_version())

    def close(self) -> None:
        """Close every client (process shutdown only: Lite keeps its lock until exit)."""
        with self._lock:
            for client in self._clients.values():
                with contextlib.suppress(Exception):  # closing is best-effort at shutdown
                    client.close()
            self._clients.clear()


# milvus_lite's ServerManager logs why a data dir would not open (with its traceback) and hands
# pymilvus only None, so pymilvus raises a bare "Open local milvus failed": the cause is in the
# log record alone.
_LITE_LOGGER = "milvus_lite.server_manager"
_LOCKED = "DataDirLockedError"  # milvus_lite.exceptions; matched by name: Lite loads lazily


class _LiteRefusals(logging.Filter):
    """Takes this thread's record of a refused data dir off milvus_lite's logger and keeps its
    exception: an expected refusal (a server holds the dir, or the dir cannot be written: an
    OSError) gets a one-line error naming the cause, not a traceback. Other threads' records
    and every other failure are logged as before."""

    def __init__(self) -> None:
        super().__init__()
        self._thread = threading.get_ident()
        self.caught: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        # Filters run in the logging thread: the one whose open failed, or another's.
        if threading.get_ident() != self._thread or not _refusal(exc):
            return True
        self.caught = exc
        return False


def _refusal(exc: BaseException | None) -> bool:
    return type(exc).__name__ == _LOCKED or isinstance(exc, OSError)


@contextlib.contextmanager
def _lite_refusals() -> Iterator[_LiteRefusals]:
    lite_logger = logging.getLogger(_LITE_LOGGER)
    refusals = _LiteRefusals()
    lite_logger.addFilter(refusals)
    try:
        yield refusals
    finally:
        lite_logger.removeFilter(refusals)


def _unavailable(uri: str, exc: BaseException) -> EagleError:
    shown = masked(uri, uri)
    # pymilvus's word for a server URI it cannot use (for Lite, also "open failed": not config)
    if type(exc).__name__ == "ConnectionConfigException" and not is_lite(uri):
        return SettingsError(f"milvus.uri {shown!r} is not usable: {masked(str(exc), uri)}")
    error = _unavailable_store(shown, exc)
    return BackendUnavailableError(masked(error.message, uri), **error.fields)


def _unavailable_store(uri: str, exc: BaseException) -> BackendUnavailableError:
    if type(exc).__name__ == _LOCKED:
        # Said to every command that opens the store: only some of them can go through the
        # server instead (serve, doctor --consistency, export, import, eval cannot).
        return BackendUnavailableError(
            "the Milvus Lite data dir is in use by another process (a running `eagle-rag "
            "serve`?): stop it first; `kb`, `ingest`, `tasks`, `search` and `ask` can go "
            "through that server instead (--server URL or EAGLE_SERVER_URL)",
            backend="milvus",
            uri=uri,
            in_use=True,
        )
    if isinstance(exc, OSError):  # milvus_lite only logs it; pymilvus says "open failed"
        reason = f"cannot open the Milvus Lite data dir: {type(exc).__name__}: {exc}"
        return BackendUnavailableError(
            f"Milvus is unavailable: {reason}", backend="milvus", uri=uri
        )
    return BackendUnavailableError(f"Milvus is unavailable: {exc}", backend="milvus", uri=uri)
