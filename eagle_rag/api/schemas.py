"""Request and response models: the wire contract, with examples for the OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from eagle_rag.api.documented import first_problem
from eagle_rag.db.records import DocumentRecord, KnowledgeBaseRecord, TaskRecord
from eagle_rag.plugins.payloads import QueryRequest

KB_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KnowledgeBaseCreate(_Body):
    kb_name: str = Field(pattern=KB_NAME, examples=["handbook"])
    engine: str = Field(default="eagle", max_length=64)
    description: str = Field(default="", max_length=2000)
    creation_settings: dict[str, Any] = Field(
        default_factory=dict, examples=[{"chunk_size": 400, "chunk_overlap": 40}]
    )
    retrieval_settings: dict[str, Any] = Field(default_factory=dict)
    plugin_namespace: str | None = Field(
        default=None, max_length=40, description="The instance's namespace (optional)."
    )


class KnowledgeBaseOut(BaseModel):
    kb_name: str
    engine: str
    description: str
    creation_settings: dict[str, Any]
    retrieval_settings: dict[str, Any] = Field(default_factory=dict)
    collections_used: list[str]
    documents: int
    created_at: str


class SubmissionOut(BaseModel):
    job_id: str
    document_id: str
    status: str = Field(examples=["queued"])
    dedup_hit: bool


class Progress(BaseModel):
    current: int
    total: int


class TaskOut(BaseModel):
    job_id: str
    document_id: str
    kb_name: str
    filename: str = Field(default="", description="The document's file name (or its URL).")
    status: Literal["queued", "processing", "completed", "failed"]
    phase: str
    progress: Progress
    error: str | None = None
    attempts: int
    log: list[str] = Field(default_factory=list)
    created_at: str
    updated_at: str


class DocumentOut(BaseModel):
    document_id: str
    kb_name: str
    filename: str
    mime_type: str
    size: int
    sha256: str
    status: str
    pages: int | None = None
    chunk_count: int
    collections_used: list[str]
    tags: list[str]
    metadata: dict[str, Any]
    source_url: str | None = None
    error: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class RetrievalOptions(_Body):
    """The retrieval options, declared once: REST bodies (and their SSE variants), MCP tools,
    the CLI and the answer engine all build their QueryRequest from this model.

    ``plugin_namespace`` is the seeds' request field: accepted like the ``X-Eagle-Namespace``
    header, and refused (403) when it names another namespace than the instance's.
    """

    kb_name: str | None = Field(default=None, pattern=KB_NAME)
    kb_names: list[str] = Field(default_factory=list, max_length=100)
    document_ids: list[str] = Field(default_factory=list, max_length=1000)
    tags: list[str] = Field(default_factory=list, max_length=100)
    filters: dict[str, Any] = Field(default_factory=dict, examples=[{"year": {"gte": 2021}}])
    top_k: int = Field(default=5, ge=1, le=100)
    mode: Literal["dense", "sparse", "hybrid"] = "hybrid"
    rerank: bool | None = None
    expand_parents: bool | None = None
    token_budget: int | None = Field(default=None, ge=1, le=1_000_000)
    with_images: bool | None = Field(
        default=None,
        description="Search images too: true always, false never; unset: hybrid searches do.",
    )
    retrieval_settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per KB bound to another engine: settings from its retrieval_schema.",
        examples=[{"support-docs": {"score_threshold": 0.3}}],
    )
    plugin_namespace: str | None = Field(
        default=None, max_length=40, description="The instance's namespace (optional)."
    )

    def scope(self) -> tuple[str, ...]:
        names = [*([self.kb_name] if self.kb_name else []), *self.kb_names]
        return tuple(dict.fromkeys(names))

    def query_request(self, text: str) -> QueryRequest:
        """The kernel's request for ``text`` with these options."""
        return QueryRequest(
            text,
            kb_names=self.scope(),
            document_ids=tuple(self.document_ids),
            tags=tuple(self.tags),
            filters=self.filters,
            top_k=self.top_k,
            mode=self.mode,
            with_images=self.with_images,
            rerank=self.rerank,
            expand_parents=self.expand_parents,
            token_budget=self.token_budget,
            retrieval_settings=self.retrieval_settings,
        )

    @classmethod
    def checked(cls, **values: Any) -> Self:
        """Build from plain arguments (MCP tools, the CLI): a bad value is an InvalidInputError
        naming the field, as a REST body's would be a 422 naming it."""
        given = {k: v for k, v in values.items() if v is not None}
        try:
            return cls(**given)
        except ValidationError as exc:
            raise first_problem(exc, "request") from None


def _not_blank(query: str) -> str:
    # A query of spaces is as empty as "": the same 422, not a 400 from the search itself.
    if not query.strip():
        raise ValueError("the query must not be blank")
    return query


# The question of a search, an answer or a page search.
QueryText = Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_not_blank)]


class SearchBody(RetrievalOptions):
    query: QueryText = Field(examples=["How is the inverter wired?"])

    def query_request(self, text: str | None = None) -> QueryRequest:
        return super().query_request(self.query if text is None else text)


class SearchOnlyBody(SearchBody):
    """``POST /search``: the search fields and a relevance floor for the sources returned."""

    score_threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Drop sources whose relevance score (0..1, see retrieval.md) is lower.",
        examples=[0.5],
    )


class AttachmentIn(_Body):
    name: str = Field(min_length=1, max_length=255)
    text: str | None = Field(default=None, description="Plain text of the attachment.")
    content_base64: str | None = Field(
        default=None, description="A file (PDF, DOCX, ...) to parse, base64-encoded."
    )


class QueryBody(SearchBody):
    top_k: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Passages recalled and reranked; unset: the server's generation.top_k.",
    )
    session_id: str | None = Field(default=None, max_length=64)
    language: Literal["zh", "en"] | None = None
    top_n: int | None = Field(default=None, ge=1, le=20)
    attachments: list[AttachmentIn] = Field(default_factory=list, max_length=10)


class ErrorOut(BaseModel):
    code: str = Field(examples=["not_found"])
    message: str
    details: dict[str, Any] | None = None


def kb_out(
    kb: KnowledgeBaseRecord, documents: int, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``settings``: the public (secret-masked) creation and retrieval settings."""
    shown = settings or {"creation_settings": {}, "retrieval_settings": {}}
    return {
        "kb_name": kb.name,
        "engine": kb.engine,
        "description": kb.description,
        **shown,
        "collections_used": list(kb.collections_used),
        "documents": documents,
        "created_at": kb.created_at.isoformat(),
    }


def task_out(task: TaskRecord, *, with_log: bool = False, filename: str = "") -> dict[str, Any]:
    return {
        "job_id": task.id,
        "document_id": task.document_id,
        "kb_name": task.kb_name,
        "filename": filename,
        "status": task.status,
        "phase": task.phase,
        "progress": {"current": task.progress_current, "total": task.progress_total},
        "error": task.error,
        "attempts": task.attempts,
        "log": list(task.log) if with_log else [],
        "created_at": task.created_at.isoformat(),
        "updated_at": task.updated_at.isoformat(),
    }


def document_out(document: DocumentRecord) -> dict[str, Any]:
    return {
        "document_id": document.id,
        "kb_name": document.kb_name,
        "filename": document.filename,
        "mime_type": document.mime_type,
        "size": document.size,
        "sha256": document.sha256,
        "status": document.status,
        "pages": document.pages,
        "chunk_count": document.chunk_count,
        "collections_used": list(document.collections_used),
        "tags": list(document.tags),
        "metadata": dict(document.extra),
        "source_url": document.source_url,
        "error": document.error,
        "created_at": document.created_at.isoformat() if document.created_at else None,
        "updated_at": document.updated_at.isoformat() if document.updated_at else None,
    }


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": description}
    for status, description in (
        (400, "Invalid input"),
        (401, "Missing or unknown API key"),
        (403, "Not allowed for this key or namespace"),
        (404, "Not found in this namespace"),
        (429, "Rate limited"),
        (503, "A backend is unavailable"),
    )
}
