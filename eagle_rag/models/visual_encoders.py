"""Encoders behind EMBED_VISUAL: what turns a visual chunk (and a query for it) into a vector.

Two kinds, chosen by ``models.visual_embedding.provider``:

- :class:`SummaryEncoder` (offline default): the text embedder over the head of each visual's
  ``content_summary`` (caption, heading, the first of the text in the region). No
  image-embedding weights install offline, and OCR text retrieves about as well as image
  embeddings on document pages.
- :class:`MultimodalEndpointEncoder`: an OpenAI-compatible multimodal ``/embeddings`` endpoint
  that takes images (``input: [{"image": "data:image/png;base64,..."}]``) and texts
  (``{"text": ...}``) into one space; batched, retried on 429/5xx and network errors.

``takes_images`` tells the ingest orchestrator whether to load the stored image bytes at all.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence

import numpy as np

from eagle_rag.errors import SettingsError
from eagle_rag.models.embedders import TextEncoder
from eagle_rag.models.openai_embeddings import OpenAICompatibleEncoder
from eagle_rag.settings import VisualEmbeddingSettings

SUMMARY_PREFIX = "summary:"
# "| --- | --- |", also cut short by the summary's length: bars, colons and dashes only
_TABLE_RULE = re.compile(r"^[\s|:]*-[\s|:-]*$")
_CELL_BAR = re.compile(r"(?<!\\)\|")  # a cell separator, not an escaped "\|" inside a cell
# What the embedder reads of a summary (characters, after plain_tables): its caption and heading
# come first, then the region's text. The rest (a chart's numbers, its notes and source lines, a
# long table's later rows) stays in the stored summary for BM25 and the chat model; in one dense
# vector it adds little and costs embedding time: a 40-page chart report's 52 summaries came to
# ~5,400 tokens, most of what its visuals added to its ingest (benchmarks/RESULTS.md).
EMBEDDED_CHARS = 320


class SummaryEncoder:
    """The text encoder, applied to a visual's content_summary (and to its queries)."""

    takes_images = False

    def __init__(self, text: TextEncoder) -> None:
        self.name = SUMMARY_PREFIX + text.name
        self.dim = text.dim
        self._text = text

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._text.embed_passages([embedded_text(t) for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._text.embed_queries(texts)

    def embed_images(self, images: Sequence[bytes]) -> np.ndarray:
        raise SettingsError(f"the visual encoder {self.name!r} embeds summaries, not images")

    def count_tokens(self, text: str) -> int:
        return self._text.count_tokens(embedded_text(text))


def embedded_text(summary: str) -> str:
    """The part of a visual's summary its vector is made from: its tables as plain rows, cut
    at the last word boundary within EMBEDDED_CHARS."""
    plain = plain_tables(summary)
    if len(plain) <= EMBEDDED_CHARS:
        return plain
    head = plain[: EMBEDDED_CHARS + 1]
    cut = max(head.rfind(" "), head.rfind("\n"))
    return (head[:cut] if cut > 0 else head[:EMBEDDED_CHARS]).rstrip()


def plain_tables(summary: str) -> str:
    """A summary's pipe tables as plain rows of cell text, for the embedder.

    The stored summary keeps Markdown (a chat model reads the table from it), but the rule line,
    the bars and the empty cells carry nothing a text embedder uses and cost tokens: on a
    chart-heavy report they were a fifth of the visuals' summary tokens (benchmarks/RESULTS.md).
    """
    lines = []
    for line in summary.splitlines():
        if _TABLE_RULE.match(line):
            continue
        stripped = line.strip()
        if stripped.startswith("|"):  # a row; the summary's cut may have taken its end
            cells = (c.strip().replace("\\|", "|") for c in _CELL_BAR.split(stripped))
            line = " ".join(c for c in cells if c)
        lines.append(line)
    return "\n".join(lines)


class MultimodalEndpointEncoder(OpenAICompatibleEncoder):
    """An OpenAI-compatible multimodal embeddings endpoint: images at ingest, text queries, each
    sent as an ``{"image"|"text": ...}`` object (the endpoint's batching, retries and checks)."""

    kind = "multimodal"
    backend = "visual embedding"
    takes_images = True

    def embed_images(self, images: Sequence[bytes]) -> np.ndarray:
        return self._embed([{"image": data_url(image)} for image in images])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([{"text": text} for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([{"text": text} for text in texts])


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
