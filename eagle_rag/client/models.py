"""Typed results of the REST API, parsed from its JSON; each keeps the body it came from.

Fields follow docs/api.md. ``raw`` holds the full JSON so that fields added by newer servers are
never lost to an older client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

TaskStatus = Literal["queued", "processing", "completed", "failed"]


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    """A knowledge base with its engine, settings (secrets masked) and document count."""

    kb_name: str
    engine: str
    description: str
    documents: int
    collections_used: tuple[str, ...]
    creation_settings: Mapping[str, Any]
    retrieval_settings: Mapping[str, Any]
    created_at: str
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> KnowledgeBase:
        return cls(
            kb_name=str(body["kb_name"]),
            engine=str(body.get("engine", "eagle")),
            description=str(body.get("description", "")),
            documents=int(body.get("documents", 0)),
            collections_used=tuple(body.get("collections_used") or ()),
            creation_settings=dict(body.get("creation_settings") or {}),
            retrieval_settings=dict(body.get("retrieval_settings") or {}),
            created_at=str(body.get("created_at", "")),
            raw=dict(body),
        )


@dataclass(frozen=True, slots=True)
class Submission:
    """An accepted ingest: the job that does the work and the document it makes."""

    job_id: str
    document_id: str
    status: str
    dedup_hit: bool

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Submission:
        return cls(
            str(body["job_id"]),
            str(body["document_id"]),
            str(body.get("status", "")),
            bool(body.get("dedup_hit", False)),
        )


@dataclass(frozen=True, slots=True)
class Task:
    """An ingest task: its status, phase and progress (``current`` of ``total`` steps)."""

    job_id: str
    document_id: str
    kb_name: str
    status: TaskStatus
    phase: str
    current: int
    total: int
    error: str | None
    attempts: int
    log: tuple[str, ...]
    created_at: str
    updated_at: str
    filename: str = ""  # the document's file name (or its URL)

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")

    @property
    def fraction(self) -> float:
        """Progress in [0, 1] (1 once completed, whatever the counters say)."""
        if self.status == "completed":
            return 1.0
        return min(1.0, self.current / self.total) if self.total > 0 else 0.0

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Task:
        progress = body.get("progress") or {}
        return cls(
            job_id=str(body["job_id"]),
            document_id=str(body.get("document_id", "")),
            kb_name=str(body.get("kb_name", "")),
            status=body.get("status", "queued"),
            phase=str(body.get("phase", "")),
            current=int(progress.get("current", 0)),
            total=int(progress.get("total", 0)),
            error=body.get("error"),
            attempts=int(body.get("attempts", 0)),
            log=tuple(body.get("log") or ()),
            created_at=str(body.get("created_at", "")),
            updated_at=str(body.get("updated_at", "")),
            filename=str(body.get("filename", "")),
        )


@dataclass(frozen=True, slots=True)
class Document:
    """A catalog entry: the file, its status, pages, chunks, tags and metadata."""

    document_id: str
    kb_name: str
    filename: str
    mime_type: str
    size: int
    status: str
    pages: int | None
    chunk_count: int
    tags: tuple[str, ...]
    metadata: Mapping[str, Any]
    source_url: str | None
    error: str | None
    sha256: str = ""
    collections_used: tuple[str, ...] = ()
    created_at: str = ""
    updated_at: str = ""
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Document:
        return cls(
            document_id=str(body["document_id"]),
            kb_name=str(body.get("kb_name", "")),
            filename=str(body.get("filename", "")),
            mime_type=str(body.get("mime_type", "")),
            size=int(body.get("size", 0)),
            status=str(body.get("status", "")),
            pages=body.get("pages"),
            chunk_count=int(body.get("chunk_count", 0)),
            tags=tuple(body.get("tags") or ()),
            metadata=dict(body.get("metadata") or {}),
            source_url=body.get("source_url"),
            error=body.get("error"),
            sha256=str(body.get("sha256") or ""),
            collections_used=tuple(body.get("collections_used") or ()),
            created_at=str(body.get("created_at", "")),
            updated_at=str(body.get("updated_at", "")),
            raw=dict(body),
        )


@dataclass(frozen=True, slots=True)
class TextSource:
    """A cited passage; ``score`` is the relevance in [0, 1] (docs/retrieval.md), ``scores``
    the raw value of each list that found it."""

    index: int
    chunk_id: str
    document_id: str
    filename: str
    kb_name: str
    path: str
    level: int | None
    type: str
    page_nums: tuple[int, ...]
    content: str
    score: float
    scores: Mapping[str, float]
    metadata: Mapping[str, Any]
    boxes: tuple[Mapping[str, Any], ...] = ()
    collection: str = ""
    truncated: bool = False  # ``content`` was cut (an answer's sources are capped)
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TextSource:
        return cls(
            index=int(body["index"]),
            chunk_id=str(body.get("chunk_id", "")),
            document_id=str(body.get("document_id", "")),
            filename=str(body.get("filename", "")),
            kb_name=str(body.get("kb_name", "")),
            path=str(body.get("path", "")),
            level=body.get("level"),
            type=str(body.get("type", "text")),
            page_nums=tuple(int(p) for p in body.get("page_nums") or ()),
            content=str(body.get("content", "")),
            score=float(body.get("score", 0.0)),
            scores=dict(body.get("scores") or {}),
            metadata=dict(body.get("metadata") or {}),
            boxes=tuple(body.get("boxes") or ()),
            collection=str(body.get("collection", "")),
            truncated=bool(body.get("truncated", False)),
            raw=dict(body),
        )


@dataclass(frozen=True, slots=True)
class ImageSource:
    """A page image, figure or table, anchored to its page and section; ``url`` fetches the
    picture (``GET /images/{id}``, relative to the server), ``boxes`` place it on its page."""

    index: int
    chunk_id: str
    document_id: str
    filename: str
    kb_name: str
    image_id: str | None
    page: int | None
    chunk_type: str
    parent_section: str
    content_summary: str
    score: float
    scores: Mapping[str, float]
    url: str | None = None
    caption: str = ""
    page_nums: tuple[int, ...] = ()
    boxes: tuple[Mapping[str, Any], ...] = ()
    source_chunk_id: str | None = None
    media_type: str | None = None
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ImageSource:
        return cls(
            index=int(body["index"]),
            chunk_id=str(body.get("chunk_id", "")),
            document_id=str(body.get("document_id", "")),
            filename=str(body.get("filename", "")),
            kb_name=str(body.get("kb_name", "")),
            image_id=body.get("image_id"),
            page=body.get("page"),
            chunk_type=str(body.get("chunk_type", "image")),
            parent_section=str(body.get("parent_section", "")),
            content_summary=str(body.get("content_summary", "")),
            score=float(body.get("score", 0.0)),
            scores=dict(body.get("scores") or {}),
            url=body.get("url"),
            caption=str(body.get("caption") or ""),
            page_nums=tuple(int(p) for p in body.get("page_nums") or ()),
            boxes=tuple(body.get("boxes") or ()),
            source_chunk_id=body.get("source_chunk_id"),
            media_type=body.get("media_type"),
            raw=dict(body),
        )


@dataclass(frozen=True, slots=True)
class AttachmentSource:
    """A file attached to the question, as the answer numbers it."""

    index: int
    name: str

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AttachmentSource:
        return cls(int(body["index"]), str(body.get("name", "")))


@dataclass(frozen=True, slots=True)
class Sources:
    """The sources of a search or an answer, each with its ``index``.

    An answer (``/query``) numbers them in one sequence, the ``[n]`` its text cites: text
    ``1..T``, then the attachments ``T+1..T+A``, then the images. A search (``/search``) has no
    attachments and numbers the text and the image sources each from 1.
    """

    text: tuple[TextSource, ...] = ()
    image: tuple[ImageSource, ...] = ()
    attachments: tuple[AttachmentSource, ...] = ()

    @classmethod
    def from_json(cls, body: Mapping[str, Any] | None) -> Sources:
        body = body or {}
        return cls(
            tuple(TextSource.from_json(s) for s in body.get("text") or ()),
            tuple(ImageSource.from_json(s) for s in body.get("image") or ()),
            tuple(AttachmentSource.from_json(s) for s in body.get("attachments") or ()),
        )

    def cited(self, number: int) -> TextSource | AttachmentSource | ImageSource | None:
        """The source an answer's ``[number]`` names (None: no such source was sent)."""
        every: list[TextSource | AttachmentSource | ImageSource] = [
            *self.text,
            *self.attachments,
            *self.image,
        ]
        return next((s for s in every if s.index == number), None)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """``POST /search``: ranked sources, the route taken and each step."""

    query: str
    kb_names: tuple[str, ...]
    sources: Sources
    route: Mapping[str, Any]
    steps: tuple[Mapping[str, Any], ...]
    token_count: int | None = None  # the passages' tokens, counted when a budget was given
    truncated: bool = False  # ``token_budget`` left passages out
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SearchResult:
        return cls(
            query=str(body.get("query", "")),
            kb_names=tuple(body.get("kb_names") or ()),
            sources=Sources.from_json(body.get("sources")),
            route=dict(body.get("route") or {}),
            steps=tuple(body.get("steps") or ()),
            token_count=body.get("token_count"),
            truncated=bool(body.get("truncated", False)),
            raw=dict(body),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """``POST /query``: the cited answer, its sources, steps and warnings."""

    session_id: str
    answer: str
    sources: Sources
    route: Mapping[str, Any]
    steps: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Answer:
        return cls(
            session_id=str(body.get("session_id", "")),
            answer=str(body.get("answer", "")),
            sources=Sources.from_json(body.get("sources")),
            route=dict(body.get("route") or {}),
            steps=tuple(body.get("steps") or ()),
            warnings=tuple(body.get("warnings") or ()),
            raw=dict(body),
        )


# --- stream events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionEvent:
    session_id: str


@dataclass(frozen=True, slots=True)
class StepEvent:
    """One stage as it ran (``name``, ``status``, ``ms`` and stage details)."""

    name: str
    status: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SourcesEvent:
    sources: Sources


@dataclass(frozen=True, slots=True)
class TokenEvent:
    delta: str


@dataclass(frozen=True, slots=True)
class SearchDone:
    result: SearchResult


@dataclass(frozen=True, slots=True)
class AnswerDone:
    answer: Answer


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The stream ended with an error: its code, message and details (``backend``,
    ``retry_after``...); ``to_error`` is its class in the error tree, details as its fields."""

    code: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_error(self) -> Exception:
        from eagle_rag.client.errors import error_from_event

        body = {"code": self.code, "message": self.message, "details": dict(self.details)}
        return error_from_event(body)


SearchEvent = StepEvent | SourcesEvent | SearchDone | ErrorEvent
QueryEvent = SessionEvent | StepEvent | SourcesEvent | TokenEvent | AnswerDone | ErrorEvent


def search_event(name: str, data: Any) -> SearchEvent | None:
    """A ``/search/stream`` SSE event as its typed event (None: an event this client ignores)."""
    if name == "done":
        return SearchDone(SearchResult.from_json(data))
    return _common_event(name, data)


def query_event(name: str, data: Any) -> QueryEvent | None:
    """A ``/query/stream`` SSE event as its typed event (None: an event this client ignores)."""
    if name == "session":
        return SessionEvent(str(data["session_id"]))
    if name == "token":
        return TokenEvent(str(data.get("delta", "")))
    if name == "done":
        return AnswerDone(Answer.from_json(data))
    return _common_event(name, data)


def _common_event(name: str, data: Any) -> StepEvent | SourcesEvent | ErrorEvent | None:
    if name == "step":
        return StepEvent(str(data.get("name", "")), str(data.get("status", "ok")), dict(data))
    if name == "sources":
        return SourcesEvent(Sources.from_json(data))
    if name == "error":
        if not isinstance(data, Mapping):  # not JSON (a proxy's text): the text is the message
            return ErrorEvent("error", str(data))
        details = data.get("details")
        return ErrorEvent(
            str(data.get("code", "error")),
            str(data.get("message", "")),
            dict(details) if isinstance(details, Mapping) else {},
        )
    return None
