"""Encoders behind EMBED_VISUAL: what turns a visual chunk (and a query for it) into a vector.

Two kinds, chosen by ``models.visual_embedding.provider``:

- :class:`SummaryEncoder` (offline default): the text embedder over each visual's
  ``content_summary`` (caption + text in the region + heading). No image-embedding weights
  install offline, and OCR text retrieves about as well as image embeddings on document pages.
- :class:`MultimodalEndpointEncoder`: an OpenAI-compatible multimodal ``/embeddings`` endpoint
  that takes images (``input: [{"image": "data:image/png;base64,..."}]``) and texts
  (``{"text": ...}``) into one space; batched, retried on 429/5xx and network errors.

``takes_images`` tells the ingest orchestrator whether to load the stored image bytes at all.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from eagle_rag.errors import SettingsError
from eagle_rag.models.embedders import TextEncoder, normalise
from eagle_rag.models.http_json import JsonEndpoint
from eagle_rag.settings import VisualEmbeddingSettings

SUMMARY_PREFIX = "summary:"


class SummaryEncoder:
    """The text encoder, applied to a visual's content_summary (and to its queries)."""

    takes_images = False

    def __init__(self, text: TextEncoder) -> None:
        self.name = SUMMARY_PREFIX + text.name
        self.dim = text.dim
        self._text = text

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._text.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._text.embed_queries(texts)

    def embed_images(self, images: Sequence[bytes]) -> np.ndarray:
        raise SettingsError(f"the visual encoder {self.name!r} embeds summaries, not images")

    def count_tokens(self, text: str) -> int:
        return self._text.count_tokens(text)


class MultimodalEndpointEncoder:
    """An OpenAI-compatible multimodal embeddings endpoint: images at ingest, text queries."""

    takes_images = True

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dim: int,
        api_key: str = "",
        batch_size: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.name = f"multimodal:{model}"
        self.model = model
        self.dim = dim
        self._batch_size = max(1, batch_size)
        self._endpoint = JsonEndpoint(
            base_url.rstrip("/") + "/embeddings",
            backend="visual embedding",
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            transport=transport,
            sleep=sleep,
        )

    def embed_images(self, images: Sequence[bytes]) -> np.ndarray:
        return self._embed([{"image": data_url(image)} for image in images])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([{"text": text} for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([{"text": text} for text in texts])

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4

    def close(self) -> None:
        self._endpoint.close()

    def _embed(self, items: list[dict[str, str]]) -> np.ndarray:
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._batch(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        return normalise(np.concatenate(parts))

    def _batch(self, items: list[dict[str, str]]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": items, "encoding_format": "float"}
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


def data_url(image: bytes) -> str:
    """``data:<type>;base64,...`` for PNG or JPEG bytes (the two formats visuals are stored in)."""
    media = "image/jpeg" if image[:3] == b"\xff\xd8\xff" else "image/png"
    return f"data:{media};base64,{base64.b64encode(image).decode('ascii')}"


def build_visual_encoder(
    config: VisualEmbeddingSettings, text: TextEncoder
) -> SummaryEncoder | MultimodalEndpointEncoder:
    """The configured visual encoder (the summary one wraps the host's text encoder)."""
    if config.provider == "summary":
        return SummaryEncoder(text)
    if not config.base_url or not config.model:
        raise SettingsError("the multimodal visual embedding provider needs base_url and model")
    return MultimodalEndpointEncoder(
        base_url=config.base_url,
        model=config.model,
        dim=config.dim,
        api_key=config.api_key.get_secret_value(),
        batch_size=config.batch_size,
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
    )
