"""Search, answers (each with an SSE variant) and sessions."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from fastapi import APIRouter
from sse_starlette import EventSourceResponse

from eagle_rag.api.deps import App, Who
from eagle_rag.api.errors import outage_in
from eagle_rag.api.schemas import ERRORS, QueryBody, SearchOnlyBody
from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import EagleError, error_body
from eagle_rag.generation.attachments import read_attachment
from eagle_rag.generation.engine import AnswerRequest
from eagle_rag.retrieval.wire import search_response

logger = logging.getLogger(__name__)

router = APIRouter(responses=ERRORS)


@router.post("/search", tags=["search"])
async def search(body: SearchOnlyBody, app: App, who: Who) -> dict[str, Any]:
    """Ranked evidence: ``{sources: {text, image}, route, steps}``."""
    who.check_kbs(body.scope())
    pack = await app.retrieval.search(body.query_request(), allowed_kbs=who.kb_names)
    return search_response(pack, score_threshold=body.score_threshold)


@router.post("/search/stream", tags=["search"], response_class=EventSourceResponse)
async def search_stream(body: SearchOnlyBody, app: App, who: Who) -> EventSourceResponse:
    """SSE: one ``step`` per stage, then ``sources`` and ``done`` (or ``error``). A caller's
    mistake (an unknown KB, a bad filter) is a 4xx before the stream starts, as on /query/stream."""
    who.check_kbs(body.scope())
    request = body.query_request()
    await asyncio.to_thread(app.retrieval.check, request, allowed_kbs=who.kb_names)

    async def events() -> AsyncIterator[dict[str, str]]:
        try:
            pack = await app.retrieval.search(request, allowed_kbs=who.kb_names)
        except EagleError as exc:
            yield _event("error", error_body(exc))
            return
        except Exception as exc:  # never a cut stream: it ends with an error, as /query/stream
            logger.exception("search stream crashed")
            yield _event("error", error_body(exc))
            return
        result = search_response(pack, score_threshold=body.score_threshold)
        for step in result["steps"]:
            yield _event("step", step)
        yield _event("sources", result["sources"])
        yield _event("done", result)

    return EventSourceResponse(events(), ping=15)


async def _answer_request(app: EagleApp, body: QueryBody) -> AnswerRequest:
    attachments = [
        await asyncio.to_thread(
            read_attachment, app, a.name, text=a.text, content_base64=a.content_base64
        )
        for a in body.attachments
    ]
    recall = body.query_request()
    if "top_k" not in body.model_fields_set:  # as on MCP and the CLI: the configured depth
        recall = replace(recall, top_k=app.settings.generation.top_k)
    return AnswerRequest(
        recall,
        top_n=body.top_n,
        language=body.language,
        session_id=body.session_id,
        attachments=tuple(attachments),
    )


@router.post("/query", tags=["answers"])
async def query(body: QueryBody, app: App, who: Who) -> dict[str, Any]:
    """A grounded answer with ``[n]`` citations: ``{session_id, answer, sources, route, steps}``.

    A failure after the request was accepted is returned in ``error`` with whatever was known;
    an outage (retrieval's backends or the chat model do not answer) is a 503 + Retry-After
    naming the backend.
    """
    who.check_kbs(body.scope())
    request = await _answer_request(app, body)
    # Caller mistakes (a bad filter too): a 4xx, not an error body and an empty session.
    await asyncio.to_thread(app.answers.validate, request, allowed_kbs=who.kb_names)
    result = await app.answers.answer(request, allowed_kbs=who.kb_names)
    outage = outage_in(result.get("error"))
    if outage is not None:
        raise outage
    return result


@router.post("/query/stream", tags=["answers"], response_class=EventSourceResponse)
async def query_stream(body: QueryBody, app: App, who: Who) -> EventSourceResponse:
    """SSE: ``session``, ``step``*, ``sources``, ``token``*, ``done`` — or ``error``."""
    who.check_kbs(body.scope())
    request = await _answer_request(app, body)
    await asyncio.to_thread(app.answers.validate, request, allowed_kbs=who.kb_names)

    async def events() -> AsyncIterator[dict[str, str]]:
        # Closed with the response: a client gone mid-answer must end the answer's turn now
        # (an unanswered new session is deleted), not whenever the generator is collected.
        async with aclosing(app.answers.stream(request, allowed_kbs=who.kb_names)) as stream:
            async for name, data in stream:
                yield _event(name, data)

    return EventSourceResponse(events(), ping=15)


# --- sessions ----------------------------------------------------------------------------------


@router.get("/sessions", tags=["sessions"])
async def list_sessions(app: App, who: Who) -> list[dict[str, Any]]:
    """The caller's most recently active sessions (100)."""
    sessions = await asyncio.to_thread(app.repositories.sessions.list_within, who.kb_names)
    return [
        {
            "session_id": s.id,
            "title": s.title,
            "kb_names": list(s.kb_names),
            "created_at": s.created_at.isoformat(),
            "updated_at": s.updated_at.isoformat(),
        }
        for s in sessions
    ]


@router.get("/sessions/{session_id}/messages", tags=["sessions"])
async def session_messages(session_id: str, app: App, who: Who) -> dict[str, Any]:
    await asyncio.to_thread(app.repositories.sessions.get, session_id, within=who.kb_names)
    messages = await asyncio.to_thread(app.repositories.sessions.messages, session_id)
    return {
        "session_id": session_id,
        "messages": [
            {
                "seq": m.seq,
                "role": m.role,
                "content": m.content,
                "sources": dict(m.sources),
                "steps": list(m.steps),
                "created_at": m.created_at.isoformat(),
            }
            for m in messages
        ],
    }


@router.delete("/sessions/{session_id}", tags=["sessions"])
async def delete_session(session_id: str, app: App, who: Who) -> dict[str, Any]:
    await asyncio.to_thread(app.repositories.sessions.get, session_id, within=who.kb_names)
    await asyncio.to_thread(app.repositories.sessions.delete, session_id)
    return {"session_id": session_id, "deleted": True}


def _event(name: str, data: Any) -> dict[str, str]:
    return {"event": name, "data": json.dumps(data, ensure_ascii=False)}
