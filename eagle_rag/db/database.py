"""The metadata database: engine, sessions, migrations and a health probe."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from eagle_rag.errors import BackendUnavailableError, ConflictError, SettingsError
from eagle_rag.settings import database_backend, mask_url_password

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class Database:
    """One engine per process. Construction does no I/O; the first session connects."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = _dialect_url(url)
        self.backend = database_backend(self.url)
        self.engine: Engine = _create_engine(self.url, echo, self.backend)
        if self.backend == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back if it raises."""
        session = self._sessions()
        try:
            yield session
            session.commit()
        except SQLAlchemyError as exc:
            session.rollback()
            if _is_damaged_sqlite(exc):
                raise self._damaged() from exc
            if _is_connection_error(exc):
                raise self._unavailable(exc) from exc
            raise
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def migrate(self, target: str = "head") -> str:
        """Bring the schema to ``target`` (the newest revision unless told; idempotent);
        returns the revision it is at."""
        from alembic import command

        if self.backend == "sqlite":
            _ensure_sqlite_dir(self.url)
        config = _alembic_config()
        try:
            with self.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, target)
        except SQLAlchemyError as exc:
            # A read-only or full data dir, a server that does not answer: the start's refusal
            # names the cause in one line (it was the driver's traceback).
            if _is_damaged_sqlite(exc):
                raise self._damaged() from exc
            if _is_connection_error(exc):
                raise self._unavailable(exc) from exc
            raise
        return self.revision()

    def revision(self) -> str:
        with self.engine.connect() as connection:
            row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
        return str(row[0]) if row else ""

    def pending(self) -> tuple[str, ...]:
        """Revisions between the schema's and the newest, oldest first (all of them on an
        empty database: ``migrate()`` would apply them)."""
        return self.schema_state()[1]

    def schema_state(self) -> tuple[str, tuple[str, ...]]:
        """The applied revision ("" when none) and the pending ones, oldest first."""
        from alembic.script import ScriptDirectory

        try:
            current = self.revision() or None
        except SQLAlchemyError:  # no alembic_version table: nothing applied yet
            current = None
        scripts = ScriptDirectory.from_config(_alembic_config())
        if current is not None and not _known(scripts, current):
            raise ConflictError(
                f"the database is at schema revision {current!r}, which this version does not "
                f"know (newer than this release?); upgrade Eagle-RAG instead",
                revision=current,
            )
        ahead = scripts.iterate_revisions("heads", current)
        return current or "", tuple(reversed([script.revision for script in ahead]))

    def health(self) -> str:
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            if _is_damaged_sqlite(exc):
                raise self._damaged() from exc
            raise self._unavailable(exc) from exc
        info = ".".join(str(p) for p in self.engine.dialect.server_version_info or ())
        return f"{self.engine.dialect.name} {info}".strip()

    def dispose(self) -> None:
        self.engine.dispose()

    def _unavailable(self, exc: SQLAlchemyError) -> BackendUnavailableError:
        """The driver's reason on one line (psycopg's runs over three, SQLAlchemy's adds a
        link to its docs): it is a CLI's message and a /health detail."""
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
        return BackendUnavailableError(
            f"metadata database unavailable: {reason}", backend=self.backend
        )

    def _damaged(self) -> BackendUnavailableError:
        path = _sqlite_path(self.url)
        return BackendUnavailableError(
            f"metadata database unavailable: {path} is not a SQLite database (or is damaged); "
            "restore it from a backup",
            backend=self.backend,
        )


def _known(scripts: Any, revision: str) -> bool:
    from alembic.util import CommandError

    try:
        return scripts.get_revision(revision) is not None
    except CommandError:
        return False


def _alembic_config() -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _dialect_url(url: str) -> str:
    """``postgres://``, what managed providers hand out, is PostgreSQL to SQLAlchemy too."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.split("+", 1)[0] == "postgres":
        return "postgresql" + scheme[len("postgres") :] + sep + rest
    return url


def _create_engine(url: str, echo: bool, backend: str) -> Engine:
    # An unknown scheme or a driver that is not installed is the settings' fault: one line
    # naming the setting (it was SQLAlchemy's traceback on every command).
    try:
        return create_engine(url, echo=echo, **_engine_options(backend))
    except (ArgumentError, ImportError) as exc:
        raise SettingsError(
            f"database.url {mask_url_password(url)!r} is not a usable database URL "
            f"(sqlite:///<path> or postgresql://user:pw@host/db): {_reason(exc)}",
        ) from exc


def _reason(exc: Exception) -> str:
    if isinstance(exc, ImportError):
        return f"its driver is not installed ({exc.name or exc})"
    return str(exc).splitlines()[0]


def _engine_options(backend: str) -> dict[str, Any]:
    if backend == "sqlite":
        # The API and in-process workers share the file from several threads.
        return {"connect_args": {"check_same_thread": False, "timeout": 30}}
    if backend == "postgresql":
        return {"pool_pre_ping": True, "connect_args": {"connect_timeout": 5}}
    return {}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the ingest writer
    # WAL + NORMAL: no corruption on a crash, only the newest commits can be lost on power
    # loss; it saves an fsync per commit, which the many small ingest commits would pay.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_path(url: str) -> str:
    return url.split("///", 1)[-1]


def _ensure_sqlite_dir(url: str) -> None:
    path = _sqlite_path(url)
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def _is_connection_error(exc: SQLAlchemyError) -> bool:
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError) and "locked" not in str(exc)


# SQLITE_CORRUPT and SQLITE_NOTADB (primary codes; an extended code keeps them in its low byte):
# a file that is garbage, or whose pages were overwritten.
_SQLITE_DAMAGED = frozenset({11, 26})


def _is_damaged_sqlite(exc: SQLAlchemyError) -> bool:
    code = getattr(getattr(exc, "orig", None), "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _SQLITE_DAMAGED
