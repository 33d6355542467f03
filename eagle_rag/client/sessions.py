"""Conversations (``/sessions``): the calls and their typed answers, sent by both clients'
``list_sessions``, ``session_messages`` and ``delete_session``. An answer's ``session_id``
continues one (``query(..., session_id=...)``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.client.calls import Call, Exchange, path_segment
from eagle_rag.client.models import Sources


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation: its title (the first question), KBs and times."""

    session_id: str
    title: str
    kb_names: tuple[str, ...]
    created_at: str
    updated_at: str
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Session:
        return cls(
            session_id=str(body["session_id"]),
            title=str(body.get("title", "")),
            kb_names=tuple(body.get("kb_names") or ()),
            created_at=str(body.get("created_at", "")),
            updated_at=str(body.get("updated_at", "")),
            raw=dict(body),
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One turn: the question (``user``) or the answer (``assistant``, with its sources and
    steps as they were when it was given)."""

    seq: int
    role: str
    content: str
    sources: Sources
    steps: tuple[Mapping[str, Any], ...]
    created_at: str

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Message:
        return cls(
            seq=int(body.get("seq", 0)),
            role=str(body.get("role", "")),
            content=str(body.get("content", "")),
            sources=Sources.from_json(body.get("sources")),
            steps=tuple(body.get("steps") or ()),
            created_at=str(body.get("created_at", "")),
        )


def list_sessions() -> Exchange[list[Session]]:
    return Exchange(Call("GET", "/sessions"), lambda body: [Session.from_json(s) for s in body])


def session_messages(session_id: str) -> Exchange[list[Message]]:
    call = Call("GET", f"/sessions/{path_segment(session_id)}/messages")
    return Exchange(call, lambda body: [Message.from_json(m) for m in body["messages"]])


def delete_session(session_id: str) -> Exchange[bool]:
    call = Call("DELETE", f"/sessions/{path_segment(session_id)}")
    return Exchange(call, lambda body: bool(body["deleted"]))
