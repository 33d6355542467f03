"""A JSON-over-HTTP caller for model providers: timeouts, and retries with exponential backoff
on 408/409/429/5xx (honouring ``Retry-After``), with errors that say which provider failed."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from eagle_rag.errors import BackendUnavailableError, ModelProviderError

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


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
        self._max_retries = max(0, max_retries)
        self._backoff_s = backoff_s
        self._sleep = sleep
        merged = dict(headers or {})
        if api_key:
            merged["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout_s, headers=merged, transport=transport)

    def close(self) -> None:
        self._client.close()

    def post(self, payload: Mapping[str, Any]) -> Any:
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.TimeoutException as exc:
                if last:
                    raise BackendUnavailableError(
                        f"{self.backend} endpoint timed out after {attempt + 1} attempts",
                        backend=self.backend,
                    ) from exc
            except httpx.HTTPError as exc:
                if last:
                    raise BackendUnavailableError(
                        f"{self.backend} endpoint unreachable: {exc}", backend=self.backend
                    ) from exc
            else:
                if response.status_code < 400:
                    return self._json(response)
                if response.status_code not in RETRY_STATUS:
                    raise ModelProviderError(
                        f"{self.backend} endpoint refused the request ({response.status_code}): "
                        f"{response.text[:300]}",
                        model=self.model,
                        status=response.status_code,
                    )
                if last:
                    raise BackendUnavailableError(
                        f"{self.backend} endpoint kept failing ({response.status_code})",
                        backend=self.backend,
                        status=response.status_code,
                    )
                retry_after = retry_after_s(response)
                self._sleep(retry_after if retry_after is not None else self.delay(attempt))
                continue
            self._sleep(self.delay(attempt))
        raise AssertionError("unreachable")  # the loop always returns or raises

    def delay(self, attempt: int) -> float:
        return float(self._backoff_s * (2**attempt))

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
