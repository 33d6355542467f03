"""Structured logs: JSON lines (or text) with the request and task ids, secrets redacted.

``telemetry.log_format: json`` makes every record one JSON object per line with ``ts``,
``level``, ``logger``, ``message``, the ``request_id`` / ``task_id`` of the work in progress
(context variables the API middleware and the worker set) and any ``extra`` fields. Whatever the
format, a filter replaces every configured secret value (API keys, tokens, passwords, the S3
secret) and any password inside a URL with ``********`` before a record is written.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TextIO

from eagle_rag.errors import (
    AuthenticationError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
)
from eagle_rag.settings import MASK, Settings, mask_query_secrets

current_request: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_id", default=None
)
current_task: contextvars.ContextVar[str | None] = contextvars.ContextVar("task_id", default=None)

_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^\s:/@]*:)(?P<pw>[^\s@]+)(?=@)")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',]+")
_HANDLER_NAME = "eagle-rag"
# Errors that say the caller asked for something wrong (the 4xx of the edges), not a failure.
CALLER_MISTAKES = (
    AuthenticationError,
    PermissionDeniedError,
    RateLimitedError,
    NotFoundError,
    ConflictError,
    InvalidInputError,
)
# LogRecord's own attributes: everything else on a record came from ``extra=``.
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
# Extras that are another rendering of the message: uvicorn's ANSI-coloured copy of it.
_NOT_FIELDS = _RESERVED | {"color_message"}


@contextmanager
def bound(*, request: str | None = None, task: str | None = None) -> Iterator[None]:
    """Attach ids to every record logged inside the block (this thread or task)."""
    tokens = []
    if request is not None:
        tokens.append((current_request, current_request.set(request)))
    if task is not None:
        tokens.append((current_task, current_task.set(task)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def secret_values(settings: Settings) -> list[str]:
    """Every secret the settings hold, longest first (so a key containing another is masked)."""
    models = settings.models
    values = [
        settings.milvus.token.get_secret_value(),
        settings.storage.s3.secret_access_key.get_secret_value(),
        settings.storage.s3.access_key_id.get_secret_value(),
        models.embedding.api_key.get_secret_value(),
        models.rerank.api_key.get_secret_value(),
        models.chat.api_key.get_secret_value(),
        *(key.key.get_secret_value() for key in settings.server.api_keys),
    ]
    return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, mask_query_secrets(text))
    return _BEARER.sub(lambda m: m.group(1) + MASK, text)


class RedactingFilter(logging.Filter):
    """Renders the message once, redacted, so neither format can leak an argument."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = list(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage(), self.secrets)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        for key, value in list(vars(record).items()):
            if key not in _RESERVED and isinstance(value, str):
                setattr(record, key, redact(value, self.secrets))
        return True


class CallerMistakeFilter(logging.Filter):
    """A caller's mistake logged as a failure becomes one line at INFO, without its traceback.

    FastMCP logs every exception a tool raises at ERROR with its traceback: an agent naming an
    unknown KB or a bad filter wrote 40 lines into the operator's log, although the agent was
    told what was wrong and nothing failed (REST logs nothing for the same mistakes).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.levelno < logging.WARNING or not isinstance(error, CALLER_MISTAKES):
            return True
        record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
        record.args = None
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, var in (("request_id", current_request), ("task_id", current_task)):
            value = getattr(record, name, None) or var.get()
            if value:
                entry[name] = value
        for key, value in vars(record).items():
            if key not in _NOT_FIELDS and key not in entry:
                entry[key] = value if _jsonable(value) else repr(value)
        if record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(ids)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        pairs = (("request", current_request), ("task", current_task))
        ids = [f"{name}={var.get()}" for name, var in pairs if var.get()]
        record.ids = f" [{' '.join(ids)}]" if ids else ""
        return super().format(record)


def configure_logging(settings: Settings, *, stream: TextIO | None = None) -> logging.Handler:
    """Install the root handler the settings ask for (replacing an earlier one of ours)."""
    telemetry = settings.telemetry
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.addFilter(CallerMistakeFilter())
    handler.addFilter(RedactingFilter(secret_values(settings)))
    handler.setFormatter(JsonFormatter() if telemetry.log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == _HANDLER_NAME or telemetry.log_format == "json":
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(telemetry.log_level.upper())
    for name in _OWN_HANDLERS:
        # Their own handlers would bypass ours (format and redaction): let records propagate.
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    if root.level > logging.DEBUG:
        for name in _SET_UP_NARRATORS:
            logging.getLogger(name).setLevel(logging.WARNING)
    return handler


# Loggers with a handler of their own: pymilvus writes to stderr and does not propagate, so its
# records were plain-text lines in a JSON log and skipped the redaction of secrets.
_OWN_HANDLERS = (
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "celery",
    "pymilvus",
    "pymilvus.milvus_client",
    "pymilvus.bulk_writer",
    # FastMCP writes through Rich to stderr: a tool's failure was a 40-line box, not redacted.
    "fastmcp",
)
# Loggers that narrate their own set-up at INFO on every start: faiss's loader reports each
# build it could not load as a ModuleNotFoundError, which reads like a failure to an operator.
_SET_UP_NARRATORS = ("faiss.loader", "alembic.runtime.plugins")


def _jsonable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool | type(None) | list | dict)


def install_celery_logging(settings: Settings) -> None:
    """For the Celery worker: our handler instead of Celery's, and the task id on each record."""
    from celery import signals

    tokens: dict[str, contextvars.Token[str | None]] = {}

    def setup(**_: Any) -> None:
        configure_logging(settings)

    def prerun(task_id: str | None = None, args: Any = None, **_: Any) -> None:
        # The ingest task's argument is our task id; Celery's own id names the message.
        ours = args[0] if args and isinstance(args[0], str) else task_id
        tokens[task_id or ""] = current_task.set(ours)

    def postrun(task_id: str | None = None, **_: Any) -> None:
        token = tokens.pop(task_id or "", None)
        if token is not None:
            current_task.reset(token)

    signals.setup_logging.connect(setup, weak=False)
    signals.task_prerun.connect(prerun, weak=False)
    signals.task_postrun.connect(postrun, weak=False)
