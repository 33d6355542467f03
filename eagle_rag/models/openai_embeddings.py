"""OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, DashScope compatible mode, vLLM,
Ollama, TEI...): batched, with timeouts and retries with exponential backoff on 429 and 5xx."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from eagle_rag.models.embedders import normalise
from eagle_rag.models.http_json import JsonEndpoint


class OpenAICompatibleEncoder:
    """An embeddings endpoint behind the TextEncoder port. Tokens are estimated (no tokenizer)."""

    kind = "openai"  # the encoder's name is ``{kind}:{model}``
    backend = "embedding"  # how its errors name the endpoint

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
        self.name = f"{self.kind}:{model}"
        self.model = model
        self.dim = dim
        self.max_tokens = max_tokens
        self._batch_size = max(1, batch_size)
        self._send_dimensions = send_dimensions
        self._endpoint = JsonEndpoint(
            base_url.rstrip("/") + "/embeddings",
            backend=self.backend,
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            transport=transport,
            sleep=sleep,
        )

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
        self._endpoint.close()

    def _embed(self, items: Sequence[Any]) -> np.ndarray:
        """``items`` (texts, or a multimodal endpoint's ``{"image"|"text": ...}`` objects)
        embedded a batch at a time, in their order, as unit vectors."""
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._batch(list(items[start : start + self._batch_size]))
            for start in range(0, len(items), self._batch_size)
        ]
        return normalise(np.concatenate(parts))

    def _batch(self, items: list[Any]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": items, "encoding_format": "float"}
        if self._send_dimensions:
            payload["dimensions"] = self.dim
        body = self._endpoint.post(payload)
        try:
            ordered = sorted(body["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in ordered], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise self._endpoint.malformed(exc) from exc
        if vectors.shape != (len(items), self.dim):
            raise self._endpoint.malformed(
                f"shape {vectors.shape}, expected ({len(items)}, {self.dim})"
            )
        return vectors
