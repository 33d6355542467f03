"""Chat models behind one streaming port.

``OpenAICompatibleChat`` speaks ``POST {base_url}/chat/completions`` with ``stream: true`` (OpenAI,
DashScope compatible mode, vLLM, Ollama...): text and image content parts, timeouts, and retries
with backoff on 408/409/429/5xx and transport errors, but only before the first token, so a
retried call never repeats text the caller already has.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from eagle_rag.errors import ModelProviderError
from eagle_rag.models.http_json import RetryPolicy, retry_after_s


@dataclass(frozen=True, slots=True)
class GenerationInput:
    """What a generator gets: the chat messages, plus the parts an offline generator reads."""

    question: str
    language: str
    messages: Sequence[dict[str, Any]]
    references: Sequence[Any] = field(default_factory=tuple)
    # What the references were searched with, when not the question alone: a follow-up joined
    # to the question it follows. An answerer that sees no history reads the topic from it.
    searched: str = ""


class ChatModel(Protocol):
    name: str

    def stream(self, job: GenerationInput) -> AsyncIterator[str]: ...


class OpenAICompatibleChat:
    """A streaming chat-completions client."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float = 0.1,
        max_tokens: int = 1024,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._policy = RetryPolicy("chat", model, max_retries, backoff_s)
        self._options = {"temperature": temperature, "max_tokens": max_tokens}
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s)
        self._headers = headers
        self._transport = transport

    async def stream(self, job: GenerationInput) -> AsyncIterator[str]:
        payload = {"model": self.model, "messages": list(job.messages), "stream": True}
        payload.update(self._options)
        policy = self._policy
        yielded = False
        async with httpx.AsyncClient(
            timeout=self._timeout, headers=self._headers, transport=self._transport
        ) as client:
            for attempt in policy.attempts():
                try:
                    async with client.stream("POST", self._url, json=payload) as response:
                        if response.status_code >= 400:
                            body = (await response.aread()).decode("utf-8", "replace")
                            status, wait = response.status_code, retry_after_s(response)
                            await asyncio.sleep(policy.refused(status, body, wait, attempt))
                            continue
                        async for delta in _deltas(response, self.model):
                            yielded = True
                            yield delta
                        return
                except httpx.TransportError as exc:
                    # Never after the first token: a retry would repeat text already sent.
                    await asyncio.sleep(policy.failed(exc, attempt, final=yielded))


async def _deltas(response: httpx.Response, model: str) -> AsyncIterator[str]:
    """Content deltas of an SSE chat stream (``data: {...}`` lines, ended by ``[DONE]``)."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
            if "error" in chunk:
                raise ModelProviderError(f"chat stream error: {chunk['error']}", model=model)
            choices = chunk.get("choices") or []
            delta = (choices[0].get("delta") or {}).get("content") if choices else None
        except (ValueError, AttributeError, IndexError, TypeError) as exc:
            raise ModelProviderError(
                f"chat stream sent a malformed event: {exc}", model=model
            ) from exc
        if delta:
            yield str(delta)
