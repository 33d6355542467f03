"""Answers from chat models that take no images: ask again as text, and remember the model.

``generation.send_images`` is on by default, so a text-only model (or a provider without image
input) gets ``image_url`` parts whenever a visual is among the hits, and refuses the request
with a 4xx. The question is then asked once more without the pictures (their captions are in the
prompt text already, so the model still sees the visual evidence) and the answer carries a
warning. The app remembers the model, so its later answers go as text at once instead of paying
for a refused request each time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from eagle_rag.errors import ModelProviderError
from eagle_rag.models.chat import ChatModel, GenerationInput

# The statuses that say "this request's content is wrong" (an image part a model cannot read).
# Auth (401/403), unknown model (404) and retryable statuses are not about the pictures.
REFUSAL_STATUSES = frozenset({400, 413, 415, 422})


class TextOnlyModels:
    """The chat models (by name) that refused image input in this app; one per AnswerEngine."""

    def __init__(self) -> None:
        self._names: set[str] = set()

    def refused(self, model: ChatModel) -> bool:
        return model.name in self._names

    def known_warning(self, model: ChatModel, images: int) -> str:
        """The warning of an answer whose pictures were held back because the model refused
        them before."""
        return (
            f"the chat model {model.name} takes no image input (it refused images before): "
            f"{images} image(s) went to it as captions only"
        )

    async def stream(
        self, model: ChatModel, job: GenerationInput, warnings: list[str]
    ) -> AsyncIterator[str]:
        """The model's answer; a refused request with pictures is sent again without them,
        the model remembered and a warning added to ``warnings``."""
        if not has_pictures(job.messages):
            async for delta in model.stream(job):
                yield delta
            return
        try:
            async for delta in _first_or_refusal(model, job):
                yield delta
            return
        except _PicturesRefusedError as refusal:
            status = refusal.status
        async for delta in model.stream(replace(job, messages=without_pictures(job.messages))):
            yield delta
        # Remembered only once the text-only request went through: a refusal that was not
        # about the pictures fails that request too and marks nothing.
        self._names.add(model.name)
        warnings.append(
            f"the chat model {model.name} refused the images ({status}); "
            "they went to it as captions only"
        )


class _PicturesRefusedError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


async def _first_or_refusal(model: ChatModel, job: GenerationInput) -> AsyncIterator[str]:
    """The model's stream; a content refusal before the first token is _PicturesRefusedError
    (after a token, a retry would repeat text the caller already has)."""
    started = False
    try:
        async for delta in model.stream(job):
            started = True
            yield delta
    except ModelProviderError as exc:
        status = exc.fields.get("status")
        if started or status not in REFUSAL_STATUSES:
            raise
        raise _PicturesRefusedError(int(status)) from exc


def has_pictures(messages: Sequence[dict[str, Any]]) -> bool:
    return any(
        part.get("type") == "image_url"
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def without_pictures(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with every ``image_url`` part dropped; a message left with text parts only
    becomes plain text content (what every chat endpoint takes)."""
    plain: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            texts = [p.get("text", "") for p in content if p.get("type") == "text"]
            message = {**message, "content": "\n\n".join(texts)}
        plain.append(message)
    return plain
