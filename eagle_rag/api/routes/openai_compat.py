"""An OpenAI-compatible facade: any chat client can use Eagle-RAG as a grounded model.

``GET /v1/models`` lists ``eagle:<kb>`` for every KB the key may use; ``POST /v1/chat/completions``
answers the last user message from the KBs its ``model`` names (``eagle:handbook``,
``eagle:handbook+policies``), with ``[n]`` citations in the text and the cited sources in the
extra ``eagle`` field (docs/integrations.md). Earlier user/assistant messages become the session's
history; ``stream: true`` sends ``chat.completion.chunk`` events and ``data: [DONE]``. Errors are
OpenAI's shape, ``{"error": {message, type, code, param}}``, with Eagle-RAG's status codes.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from eagle_rag.api.deps import caller
from eagle_rag.api.documented import inlined, json_body, read_body
from eagle_rag.api.errors import status_for
from eagle_rag.api.openai_schemas import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionBody,
    ChatCompletionChunk,
    Choice,
    EagleExtra,
    ModelList,
    ModelOut,
    OpenAIError,
    Usage,
)
from eagle_rag.api.schemas import KB_NAME
from eagle_rag.api.security import Caller
from eagle_rag.bootstrap import EagleApp
from eagle_rag.client.errors import error_from_event
from eagle_rag.errors import EagleError, InvalidInputError, NotFoundError
from eagle_rag.generation.engine import AnswerRequest

router = APIRouter(prefix="/v1", tags=["openai"])
MODEL_PREFIX = "eagle:"


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": OpenAIError, "description": description}
    for status, description in (
        (400, "A malformed request (OpenAI's invalid_request_error)"),
        (401, "No or an unknown API key"),
        (403, "The key may not use a knowledge base the model names"),
        (404, "An unknown model (a KB that does not exist)"),
        (429, "Rate limited (Retry-After)"),
        (502, "The chat model answered with an error"),
        (503, "A backend (chat model, vector store) did not answer"),
    )
}
_COMPLETION_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "model": ChatCompletion,
        "description": "The answer; with `stream: true`, `text/event-stream` of chunks, then "
        "`data: [DONE]`.",
        "content": {"text/event-stream": {"schema": inlined(ChatCompletionChunk)}},
    },
    **_ERRORS,
}


@router.get("/models", responses={200: {"model": ModelList}, **_ERRORS})
async def list_models(request: Request) -> JSONResponse:
    """``eagle:<kb>`` for each knowledge base the caller may use."""
    try:
        who = await caller(request)
        app: EagleApp = request.app.state.eagle
        kbs = await asyncio.to_thread(app.repositories.knowledge_bases.list)
    except EagleError as exc:
        return _error(exc)
    data = [_model(kb.name, kb.created_at.timestamp()) for kb in kbs if _visible(who, kb.name)]
    return JSONResponse(ModelList(data=data).model_dump(mode="json"))


@router.get("/models/{model}", responses={200: {"model": ModelOut}, **_ERRORS})
async def get_model(model: str, request: Request) -> JSONResponse:
    try:
        who = await caller(request)
        app: EagleApp = request.app.state.eagle
        names = kb_names_of(model)
        who.check_kbs(names)
        kbs = [await asyncio.to_thread(app.repositories.knowledge_bases.get, n) for n in names]
    except EagleError as exc:
        return _error(exc)
    created = max(kb.created_at.timestamp() for kb in kbs)
    return JSONResponse(_model("+".join(names), created).model_dump(mode="json"))


@router.post(
    "/chat/completions",
    response_model=None,
    responses=_COMPLETION_RESPONSES,
    openapi_extra=json_body(ChatCompletionBody),
)
async def chat_completions(request: Request) -> Any:
    """A grounded, cited answer to the last user message, plain or streamed."""
    try:
        who = await caller(request)
        body = read_body(ChatCompletionBody, await request.body())
        refuse_unsupported(body)
        app: EagleApp = request.app.state.eagle
        names = kb_names_of(body.model)
        who.check_kbs(names)
        answer = await asyncio.to_thread(_answer_request, app, body, names)
        try:
            await asyncio.to_thread(app.answers.validate, answer, allowed_kbs=who.kb_names)
        except NotFoundError as exc:
            if "kb_name" not in exc.fields:
                raise
            # The model names that KB: clients check for model_not_found, not not_found.
            raise NotFoundError(
                f"the model {body.model!r} does not exist: {exc.message}", model=body.model
            ) from None
    except EagleError as exc:
        return _error(exc)
    completion = Completion(app, body.model, answer, who)
    if body.stream:
        usage = bool((body.stream_options or {}).get("include_usage"))
        return StreamingResponse(
            completion.chunks(include_usage=usage),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    return await completion.whole()


# Options that change what the answer is: taken silently, a client asking for JSON or a tool
# call got prose and broke on it.
_UNSUPPORTED = ("tools", "tool_choice", "functions", "function_call")


def refuse_unsupported(body: ChatCompletionBody) -> None:
    extra = body.model_extra or {}
    for name in _UNSUPPORTED:
        if extra.get(name) not in (None, [], "none"):
            raise InvalidInputError(
                f"{name} is not supported: Eagle-RAG answers from documents, with citations",
                field=name,
            )
    response_format = extra.get("response_format")
    if response_format not in (None, {"type": "text"}):
        raise InvalidInputError(
            "response_format is not supported: the answer is text with [n] citations (only "
            '{"type": "text"})',
            field="response_format",
        )


def kb_names_of(model: str) -> tuple[str, ...]:
    """``eagle:a+b`` → ``("a", "b")``; anything else is an unknown model (404)."""
    names = model[len(MODEL_PREFIX) :].split("+") if model.startswith(MODEL_PREFIX) else []
    if not names or not all(re.fullmatch(KB_NAME, n) for n in names):
        raise NotFoundError(
            f"the model {model!r} does not exist: use eagle:<kb> or eagle:<kb1>+<kb2>",
            model=model,
        )
    return tuple(dict.fromkeys(names))


class Completion:
    """One answer run, shaped as an OpenAI completion or as its chunks."""

    def __init__(self, app: EagleApp, model: str, request: AnswerRequest, who: Caller) -> None:
        self._app = app
        self._model = model
        self._request = request
        self._who = who
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    async def whole(self) -> JSONResponse:
        result = await self._app.answers.answer(self._request, allowed_kbs=self._who.kb_names)
        if "answer" not in result:
            return _error(_failure(result.get("error") or {}))
        body = ChatCompletion(
            id=self.id,
            created=self.created,
            model=self._model,
            choices=[Choice(message=AssistantMessage(content=result["answer"]))],
            usage=Usage(**self._usage(result)),
            eagle=EagleExtra(**_extra(result)),
        )
        return JSONResponse(body.model_dump(mode="json"))

    async def chunks(self, *, include_usage: bool) -> AsyncIterator[str]:
        # OpenAI: with include_usage every chunk but the last carries "usage": null.
        null = {"usage": None} if include_usage else {}
        yield self._chunk({"role": "assistant", "content": ""}, **null)
        answers = self._app.answers.stream(self._request, allowed_kbs=self._who.kb_names)
        async with aclosing(answers) as stream:
            async for name, data in stream:
                if name == "token":
                    yield self._chunk({"content": data["delta"]}, **null)
                elif name == "error":
                    error = _failure(data)
                    yield _sse({"error": openai_error_body(error, status_for(error))})
                    return
                elif name == "done":
                    yield self._chunk({}, finish_reason="stop", eagle=_extra(data), **null)
                    if include_usage:
                        yield _sse({**self._head(), "choices": [], "usage": self._usage(data)})
        yield "data: [DONE]\n\n"

    def _head(self, kind: str = "chat.completion.chunk") -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self._model}

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse({**self._head(), "choices": [choice], **extra})

    def _usage(self, result: dict[str, Any]) -> dict[str, int]:
        """Tokens by the text encoder's tokenizer: the question and sources in, the answer out."""
        count = self._app.text_encoder.count_tokens
        sent = [s.get("content", "") for s in result.get("sources", {}).get("text", [])]
        prompt = count(self._request.query) + sum(count(t) for t in sent)
        completion = count(result.get("answer", ""))
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


def _answer_request(app: EagleApp, body: ChatCompletionBody, names: tuple[str, ...]) -> Any:
    """The last message is the question; earlier user/assistant turns seed a new session."""
    turns = [m for m in body.messages if m.role in ("user", "assistant")]
    if not turns or turns[-1].role != "user" or not turns[-1].text().strip():
        raise InvalidInputError(
            "the last message must be a user message with text", field="messages"
        )
    options = body.eagle
    session_id = options.session_id
    history = turns[:-1]
    if session_id is None and history:
        for name in names:  # an unknown KB must not leave a session behind
            app.repositories.knowledge_bases.get(name)
        sessions = app.repositories.sessions
        session_id = sessions.create(title=turns[-1].text()[:80], kb_names=names).id
        for turn in history:
            sessions.add_message(session_id, role=turn.role, content=turn.text())
    return app.answers.request(
        turns[-1].text(),
        kb_names=names,
        document_ids=tuple(options.document_ids),
        tags=tuple(options.tags),
        filters=options.filters,
        top_k=options.top_k,
        top_n=options.top_n,
        language=options.language,
        session_id=session_id,
    )


def _extra(result: dict[str, Any]) -> dict[str, Any]:
    """The documented extra field: what ``[n]`` in the text refers to, and the session."""
    return {
        "session_id": result.get("session_id"),
        "sources": result.get("sources", {"text": [], "image": []}),
        "warnings": result.get("warnings", []),
    }


def _model(name: str, created: float) -> ModelOut:
    return ModelOut(id=f"{MODEL_PREFIX}{name}", created=int(created))


def _visible(who: Caller, kb_name: str) -> bool:
    return who.kb_names is None or kb_name in who.kb_names


def _failure(data: dict[str, Any]) -> EagleError:
    return error_from_event(data)


# OpenAI's error types, by status, so that its clients raise the matching exception class.
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_error_type(status: int) -> str:
    """OpenAI's error ``type`` for an HTTP status."""
    return _TYPES.get(status, "api_error")


def openai_error_body(error: EagleError, status: int) -> dict[str, Any]:
    code = str(error.fields.get("remote_code") or error.code)
    if code == "not_found" and "model" in error.fields:
        code = "model_not_found"
    return {
        "message": error.message,
        "type": openai_error_type(status),
        "code": code,
        "param": error.fields.get("field"),
    }


def _error(error: EagleError) -> JSONResponse:
    status = status_for(error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if status == 429:
        headers["Retry-After"] = str(error.fields.get("retry_after", 60))
    return JSONResponse(
        {"error": openai_error_body(error, status)}, status_code=status, headers=headers
    )


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"
