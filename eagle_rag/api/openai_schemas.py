"""The OpenAI facade's wire models (``/v1``): requests as OpenAI clients send them, answers as
they read them, and Eagle-RAG's documented extra field ``eagle`` (docs/integrations.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_MESSAGES = 200


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The message's text (text parts of a multi-part content, joined)."""
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


class EagleOptions(BaseModel):
    """Eagle-RAG's own options, sent as ``extra_body={"eagle": {...}}``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = Field(default=None, max_length=64)
    top_k: int | None = Field(default=None, ge=1, le=100)
    top_n: int | None = Field(default=None, ge=1, le=20)
    filters: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list, max_length=100)
    document_ids: list[str] = Field(default_factory=list, max_length=1000)
    language: Literal["zh", "en"] | None = None


class ChatCompletionBody(BaseModel):
    """``POST /v1/chat/completions``; sampling fields (temperature, max_tokens, ...) are accepted
    and left to Eagle-RAG's model."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=2000, examples=["eagle:handbook"])
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    n: int = Field(default=1, ge=1, le=1)
    stream_options: dict[str, Any] | None = None
    eagle: EagleOptions = Field(default_factory=EagleOptions)


class ModelOut(BaseModel):
    """One grounded model: ``eagle:<kb>`` (or ``eagle:<kb1>+<kb2>``)."""

    id: str = Field(examples=["eagle:handbook"])
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "eagle-rag"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


def _no_sources() -> dict[str, list[dict[str, Any]]]:
    return {"text": [], "image": []}


class EagleExtra(BaseModel):
    """What ``[n]`` in the answer refers to: the sources as ``/query`` returns them (text and
    image lists, numbered by ``index``), the session the turn was stored in, and warnings."""

    session_id: str | None = None
    sources: dict[str, list[dict[str, Any]]] = Field(default_factory=_no_sources)
    warnings: list[Any] = Field(default_factory=list)


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class Usage(BaseModel):
    """Tokens by the text encoder's tokenizer: the question and sources in, the answer out."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    eagle: EagleExtra


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None


class ChatCompletionChunk(BaseModel):
    """One ``data:`` event of a streamed answer (then ``data: [DONE]``): the last chunk with a
    ``finish_reason`` carries ``eagle``; with ``stream_options.include_usage`` one more chunk
    with no choices carries ``usage``."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    eagle: EagleExtra | None = None
    usage: Usage | None = None


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str = Field(examples=["invalid_request_error", "not_found_error"])
    code: str | None = Field(examples=["model_not_found"])
    param: str | None = None


class OpenAIError(BaseModel):
    """OpenAI's error shape, so that its clients raise the matching exception class."""

    error: OpenAIErrorDetail
