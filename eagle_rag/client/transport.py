"""What the sync and async clients share: settings, headers, retry decisions, SSE framing and
turning error answers into the error tree. Neither client has HTTP logic of its own beyond the
send loop."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from eagle_rag import __version__
from eagle_rag.client.errors import error_from_body
from eagle_rag.errors import BackendUnavailableError, InvalidInputError

RETRY_STATUSES = frozenset({429, 503})
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Where the server is and how to talk to it.

    ``max_retries`` more attempts are made after a 429 or 503; each waits the server's
    ``Retry-After`` (capped at ``max_retry_wait_s``) or, without one, ``backoff_s * 2**attempt``.
    """

    base_url: str
    api_key: str | None = None
    namespace: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = 3
    backoff_s: float = 0.5
    max_retry_wait_s: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ClientConfig:
        """``EAGLE_SERVER_URL`` (default http://127.0.0.1:8000) and ``EAGLE_API_KEY``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "base_url": env.get("EAGLE_SERVER_URL") or "http://127.0.0.1:8000",
            "api_key": env.get("EAGLE_API_KEY") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"the Eagle-RAG URL must be http(s), not {self.base_url!r}", field="base_url"
            )
        if self.max_retries < 0 or self.timeout_s <= 0:
            raise InvalidInputError("max_retries must be >= 0 and timeout_s > 0")

    def http_options(self) -> dict[str, Any]:
        """What both clients' httpx client is built with."""
        return {"base_url": self.url, "headers": self.headers(), "timeout": self.timeout_s}

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/")

    def headers(self) -> dict[str, str]:
        headers = {"User-Agent": f"eagle-rag-client/{__version__}"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if self.namespace:
            headers["X-Eagle-Namespace"] = self.namespace
        return headers


def retry_delay(config: ClientConfig, response: httpx.Response, attempt: int) -> float | None:
    """Seconds to wait before the next attempt, or None when this answer is final."""
    if response.status_code not in RETRY_STATUSES or attempt >= config.max_retries:
        return None
    told = _retry_after(response.headers.get("retry-after"))
    wait = told if told is not None else config.backoff_s * 2**attempt
    return max(0.0, min(wait, config.max_retry_wait_s))


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def unreachable(config: ClientConfig, exc: httpx.HTTPError) -> BackendUnavailableError:
    """A transport failure (refused, reset, timed out) as the tree's unavailable error."""
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "did not answer"
    return BackendUnavailableError(
        f"Eagle-RAG at {config.url} {kind}: {type(exc).__name__}: {exc}", url=config.url
    )


def checked(response: httpx.Response) -> Any:
    """The JSON body of a successful answer; an error answer raises its error-tree class."""
    if response.status_code >= 400:
        raise error_of(response)
    if not response.content:
        return None
    return response.json()


def error_of(response: httpx.Response) -> Exception:
    """The error an answer stands for (its body must have been read)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    return error_from_body(response.status_code, body, response.text)


class SseDecoder:
    """Server-Sent Events framing: feed lines, get ``(event, data)`` once an event is complete."""

    def __init__(self) -> None:
        self._name = "message"
        self._data: list[str] = []

    def feed(self, line: str) -> tuple[str, Any] | None:
        """The event this line completes, else None (``ticks`` of the clients turn that into
        ``("", None)`` for callers that watch a clock)."""
        line = line.rstrip("\r")
        if line.startswith(":"):  # a comment (keep-alive ping)
            return None
        if line == "":
            if not self._data:
                self._name = "message"
                return None
            name, data = self._name, "\n".join(self._data)
            self._name, self._data = "message", []
            return name, _decoded(data)
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None


def _decoded(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data
