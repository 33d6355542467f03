"""OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, DashScope compatible mode, vLLM,
Ollama, TEI...): batched, with timeouts and retries with exponential backoff on 429 and 5xx."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from eagle_rag.errors import BackendUnavailableError, ModelProviderError
from eagle_rag.models.embedders import normalise

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAICompatibleEncoder:
    """An embeddings endpoint behind the TextEncoder port. Tokens are estimated (no tokenizer)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dim: int,
        api_key: str = "",
        batch_size: int = 32,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_tokens: int = 8192,
        send_dimensions: bool = False,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.dim = dim
        self.max_tokens = max_tokens
        self._url = base_url.rstrip("/") + "/embeddings"
        self._batch_size = max(1, batch_size)
        self._max_retries = max(0, max_retries)
        self._backoff_s = backoff_s
        self._send_dimensions = send_dimensions
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def count_tokens(self, text: str) -> int:
        # No tokenizer for a remote model: ~4 characters per token for Latin text, one per CJK
        # character, which errs on the side of smaller chunks.
        cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
        return cjk + (len(text) - cjk + 3) // 4

    def close(self) -> None:
        self._client.close()

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._batch(list(texts[start : start + self._batch_size]))
            for start in range(0, len(texts), self._batch_size)
        ]
        return normalise(np.concatenate(parts))

    def _batch(self, texts: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._send_dimensions:
            payload["dimensions"] = self.dim
        body = self._post(payload)
        try:
            items = sorted(body["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelProviderError(
                f"embeddings endpoint returned a malformed body: {exc}", model=self.model
            ) from exc
        if vectors.shape != (len(texts), self.dim):
            raise ModelProviderError(
                f"embeddings endpoint returned shape {vectors.shape}, expected "
                f"({len(texts)}, {self.dim})",
                model=self.model,
            )
        return vectors

    def _post(self, payload: dict[str, Any]) -> Any:
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            try:
                response = self._client.post(self._url, json=payload)
            except httpx.TimeoutException as exc:
                if last:
                    raise BackendUnavailableError(
                        f"embeddings endpoint timed out after {attempt + 1} attempts",
                        backend="embedding",
                    ) from exc
            except httpx.HTTPError as exc:
                if last:
                    raise BackendUnavailableError(
                        f"embeddings endpoint unreachable: {exc}", backend="embedding"
                    ) from exc
            else:
                if response.status_code < 400:
                    return _json(response, self.model)
                if response.status_code not in RETRY_STATUS:
                    raise ModelProviderError(
                        f"embeddings endpoint refused the request ({response.status_code}): "
                        f"{response.text[:300]}",
                        model=self.model,
                    )
                if last:
                    raise BackendUnavailableError(
                        f"embeddings endpoint kept failing ({response.status_code})",
                        backend="embedding",
                        status=response.status_code,
                    )
                retry_after = _retry_after(response)
                self._sleep(retry_after if retry_after is not None else self._delay(attempt))
                continue
            self._sleep(self._delay(attempt))
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _delay(self, attempt: int) -> float:
        return float(self._backoff_s * (2**attempt))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(float(value), 30.0) if value else None
    except ValueError:
        return None


def _json(response: httpx.Response, model: str) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ModelProviderError(
            "embeddings endpoint answered with something that is not JSON", model=model
        ) from exc
