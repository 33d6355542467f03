"""Dify's External Knowledge API: a Dify workspace binds an Eagle-RAG KB as external knowledge.

``POST /retrieval`` with ``{knowledge_id, query, retrieval_setting: {top_k, score_threshold},
metadata_condition?}`` and ``Authorization: Bearer <key>`` answers
``{records: [{content, score, title, metadata}]}``: ``knowledge_id`` is the KB name, ``score``
the relevance in [0, 1] (retrieval/relevance.py), ``title`` the file name, ``metadata`` the
passage's path, pages, ids and the document's own metadata. Errors are Dify's
``{error_code, error_msg}``: 1001 a malformed Authorization header, 1002 an unknown key or a KB
outside it (checked first: a scoped key gets 1002 for a missing KB too), 2001 an unknown KB;
Eagle-RAG adds 3001 for a malformed request body, 4290 for rate limits and 5001 for a backend
that did not answer (docs/integrations.md).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from eagle_rag.api.dify_conditions import Condition, matches, pushed_down
from eagle_rag.api.documented import json_body, read_body
from eagle_rag.api.errors import RETRY_AFTER_S
from eagle_rag.api.schemas import KB_NAME
from eagle_rag.api.security import NAMESPACE_HEADER, Gatekeeper
from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import (
    AuthenticationError,
    EagleError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
)
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.retrieval.wire import search_response

router = APIRouter(tags=["dify"])
OVERFETCH = 4  # conditions checked after the search need more candidates than top_k
MAX_FETCH = 100
# The passage's own fields every record's metadata shows (over the document's metadata). They
# are columns of the passage, not metadata keys, so conditions on them are never pushed down.
RECORD_FIELDS = ("path", "page_nums", "document_id", "chunk_id", "kb_name", "type")


class RetrievalSetting(BaseModel):
    model_config = ConfigDict(extra="allow")

    top_k: int = Field(ge=1, le=MAX_FETCH)
    score_threshold: float = Field(default=0.0, ge=0.0, le=1.0)


class MetadataCondition(BaseModel):
    model_config = ConfigDict(extra="allow")

    # Dify's own MetadataCondition allows null here and means "and" by it.
    logical_operator: Literal["and", "or"] | None = "and"
    conditions: list[Condition] | None = Field(default=None, max_length=50)


class DifyRetrieval(BaseModel):
    model_config = ConfigDict(extra="allow")  # Dify may send more than it documents

    knowledge_id: str = Field(min_length=1, max_length=64)
    query: str = Field(min_length=1, max_length=4000)
    retrieval_setting: RetrievalSetting
    metadata_condition: MetadataCondition | None = None


class DifyRecord(BaseModel):
    """One passage as Dify reads it."""

    content: str
    score: float = Field(ge=0.0, le=1.0, description="The relevance in [0, 1] (retrieval.md).")
    title: str = Field(description="The document's file name.")
    metadata: dict[str, Any] = Field(
        description="The passage's path, page_nums, document_id, chunk_id, kb_name and type, "
        "and the document's own metadata."
    )


class DifyRecords(BaseModel):
    records: list[DifyRecord]


class DifyError(BaseModel):
    """Dify's error shape: 1001 a malformed Authorization header, 1002 an unknown key or a KB
    outside it, 2001 an unknown KB; 3001 a malformed body, 4290 rate limited, 5001 a backend
    that did not answer."""

    error_code: int = Field(examples=[2001])
    error_msg: str


_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": DifyRecords, "description": "The passages, best first"},
    **{
        status: {"model": DifyError, "description": description}
        for status, description in (
            (400, "3001: the body is not Dify's request"),
            (403, "1001 or 1002: the Authorization header or the key"),
            (404, "2001: the knowledge does not exist"),
            (429, "4290: rate limited (Retry-After)"),
            (503, "5001: a backend did not answer"),
        )
    },
}


@router.post("/retrieval", responses=_RESPONSES, openapi_extra=json_body(DifyRetrieval))
async def retrieval(request: Request) -> JSONResponse:
    """Dify's External Knowledge API (see the module docstring)."""
    app: EagleApp = request.app.state.eagle
    gate: Gatekeeper = request.app.state.gate
    try:
        allowed = _admit(gate, request)
        body = read_body(DifyRetrieval, await request.body())
        records = await _records(app, body, allowed)
    except EagleError as exc:
        return dify_error(exc)
    return JSONResponse(DifyRecords(records=records).model_dump(mode="json"))


def _admit(gate: Gatekeeper, request: Request) -> frozenset[str] | None:
    header = request.headers.get("authorization")
    if not gate.open:
        scheme, _, token = (header or "").partition(" ")
        if scheme != "Bearer" or not token.strip():
            raise _AuthHeaderError(
                "Invalid Authorization header format. Expected 'Bearer <api-key>' format."
            )
    client = request.client.host if request.client else None
    return gate.admit(header, request.headers.get(NAMESPACE_HEADER), client).kb_names


async def _records(
    app: EagleApp, body: DifyRetrieval, allowed: frozenset[str] | None
) -> list[DifyRecord]:
    kb = body.knowledge_id
    # The key's scope first: a KB outside it is refused alike whether it exists or not, so a
    # scoped key cannot learn which other KBs exist (as on /search).
    if allowed is not None and kb not in allowed:
        raise PermissionDeniedError("Authorization failed: this key may not use this knowledge.")
    await _known_kb(app, kb)
    setting = body.retrieval_setting
    condition = body.metadata_condition
    conditions = (condition.conditions if condition else None) or []
    operator = (condition.logical_operator if condition else None) or "and"
    filters = pushed_down(conditions, columns=RECORD_FIELDS) if operator == "and" else {}
    fetch = min(MAX_FETCH, setting.top_k * OVERFETCH) if conditions else setting.top_k
    request = QueryRequest(body.query, kb_names=(kb,), top_k=fetch, filters=filters)
    pack = await app.retrieval.search(request, allowed_kbs=allowed)
    sources = search_response(pack, score_threshold=setting.score_threshold)["sources"]["text"]
    test = _test(conditions, operator)
    # Tested on the metadata the record shows: a condition on any field Dify sees (path,
    # document_id, type…) means what it says.
    records = (_record(s) for s in sources)
    return [r for r in records if test(r.metadata)][: setting.top_k]


async def _known_kb(app: EagleApp, kb: str) -> None:
    try:
        if not re.fullmatch(KB_NAME, kb):
            raise NotFoundError(kb)
        await asyncio.to_thread(app.repositories.knowledge_bases.get, kb)
    except NotFoundError:
        raise NotFoundError("The knowledge does not exist.", kb_name=kb) from None


def _test(conditions: list[Condition], operator: str) -> Callable[[dict[str, Any]], bool]:
    if not conditions:
        return lambda metadata: True
    combine = all if operator == "and" else any
    return lambda metadata: combine(matches(c, metadata) for c in conditions)


def _record(source: dict[str, Any]) -> DifyRecord:
    own = {k: v for k, v in source["metadata"].items() if k not in ("boxes",)}
    return DifyRecord(
        content=source["content"],
        score=source["score"],
        title=source["filename"],
        metadata={**own, **{name: source[name] for name in RECORD_FIELDS}},
    )


class _AuthHeaderError(AuthenticationError):
    """The Authorization header is not ``Bearer <key>`` (Dify's 1001)."""


def dify_error(error: EagleError) -> JSONResponse:
    body, status = dify_error_body(error)
    headers = {}
    if status in RETRY_AFTER_S:  # a rate limit or an outage: when to come back, as on every route
        headers["Retry-After"] = str(error.fields.get("retry_after", RETRY_AFTER_S[status]))
    return JSONResponse(body, status_code=status, headers=headers)


def dify_error_body(error: EagleError) -> tuple[dict[str, Any], int]:
    """Dify's ``{error_code, error_msg}`` for ``error``, and the status Dify's route gives it."""
    code, status = _DIFY_CODES.get(type(error)) or next(
        ((c, s) for kind, (c, s) in _DIFY_CODES.items() if isinstance(error, kind)), (5001, 503)
    )
    message = error.message
    if code == 1002 and isinstance(error, AuthenticationError):
        message = "Authorization failed"
    return {"error_code": code, "error_msg": message}, status


# Dify's documented codes (1001, 1002, 2001) answered with 403 and 404 as its examples do.
_DIFY_CODES: dict[type[EagleError], tuple[int, int]] = {
    _AuthHeaderError: (1001, 403),
    AuthenticationError: (1002, 403),
    PermissionDeniedError: (1002, 403),
    NotFoundError: (2001, 404),
    RateLimitedError: (4290, 429),
    InvalidInputError: (3001, 400),
}
