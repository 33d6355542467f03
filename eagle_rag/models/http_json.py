"""A JSON-over-HTTP caller for model providers: timeouts, and retries with exponential backoff
on 408/409/429/5xx (honouring ``Retry-After``), with errors that say which provider failed."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from eagle_rag.errors import BackendUnavailableError, ModelProviderError

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When a provider call is retried, how long to wait, and the error when it is not.

    The one place that decides retries for every provider client (JSON endpoints and the chat
    stream): retryable statuses (408/409/429/5xx) and transport failures are retried with
    exponential backoff (honouring ``Retry-After``) until ``max_retries`` is spent; another 4xx
    is a ModelProviderError at once.
    """

    backend: str
    model: str = ""
    max_retries: int = 4
    backoff_s: float = 0.5

    def attempts(self) -> range:
        return range(max(0, self.max_retries) + 1)

    def is_last(self, attempt: int) -> bool:
        return attempt >= max(0, self.max_retries)

    def delay(self, attempt: int) -> float:
        return float(self.backoff_s * (2**attempt))

    def refused(self, status: int, body: str, retry_after: float | None, attempt: int) -> float:
        """Raise for a final or non-retryable status; else the seconds to wait before retrying."""
        if status not in RETRY_STATUS:
            raise ModelProviderError(
                f"{self.backend} endpoint refused the request ({status}): {body[:300]}",
                model=self.model,
                status=status,
            )
        if self.is_last(attempt):
            raise BackendUnavailableError(
                f"{self.backend} endpoint kept failing ({status})",
                backend=self.backend,
                status=status,
            )
        return retry_after if retry_after is not None else self.delay(attempt)

    def failed(self, exc: httpx.HTTPError, attempt: int, *, final: bool = False) -> float:
        """Raise on the last attempt (or when ``final``); else the seconds to wait."""
        if not (final or self.is_last(attempt)):
            return self.delay(attempt)
        if isinstance(exc, httpx.TimeoutException):
            raise BackendUnavailableError(
                f"{self.backend} endpoint timed out after {attempt + 1} attempts",
                backend=self.backend,
            ) from exc
        raise BackendUnavailableError(
            f"{self.backend} endpoint unreachable: {exc}", backend=self.backend
        ) from exc


class JsonEndpoint:
    """One provider URL; ``post`` returns the decoded JSON body or raises a clear error.

    ``backend`` names the provider kind in errors (``embedding``, ``rerank``...): a 4xx other
    than the retryable ones is a ModelProviderError (our request is wrong), exhausted retries
    and transport failures are BackendUnavailableError (the provider is down).
    """

    def __init__(
        self,
        url: str,
        *,
        backend: str,
        model: str = "",
        api_key: str = "",
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.backend = backend
        self.model = model
        self.policy = RetryPolicy(backend, model, max_retries, backoff_s)
        self._sleep = sleep
        merged = dict(headers or {})
        if api_key:
            merged["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout_s, headers=merged, transport=transport)

    def close(self) -> None:
        self._client.close()

    def post(self, payload: Mapping[str, Any]) -> Any:
        policy = self.policy
        for attempt in policy.attempts():
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.HTTPError as exc:
                self._sleep(policy.failed(exc, attempt))
                continue
            if response.status_code < 400:
                return self._json(response)
            status, text = response.status_code, response.text
            self._sleep(policy.refused(status, text, retry_after_s(response), attempt))
        raise AssertionError("unreachable")  # the last attempt always returns or raises

    def delay(self, attempt: int) -> float:
        return self.policy.delay(attempt)

    def malformed(self, reason: object) -> ModelProviderError:
        """The error for a body that parsed as JSON but not as this provider's shape."""
        return ModelProviderError(
            f"{self.backend} endpoint returned a malformed body: {reason}", model=self.model
        )

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise ModelProviderError(
                f"{self.backend} endpoint answered with something that is not JSON",
                model=self.model,
            ) from exc


def retry_after_s(response: httpx.Response) -> float | None:
    """The server's Retry-After in seconds (capped), or None when absent or not a number."""
    value = response.headers.get("retry-after")
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value else None
    except ValueError:
        return None
