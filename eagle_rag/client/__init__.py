"""A typed Python client for Eagle-RAG's REST API, sync (:class:`EagleClient`) and async
(:class:`AsyncEagleClient`): knowledge bases, ingest with progress, tasks, documents and the best
pages of one, search and answers (plain or streamed as typed events). Errors are the classes of
:mod:`eagle_rag.errors`; 429 and 503 answers are retried after ``Retry-After``. See
docs/integrations.md ("Python client").
"""

from eagle_rag.client.aio import AsyncEagleClient
from eagle_rag.client.calls import Scope
from eagle_rag.client.models import (
    Answer,
    AnswerDone,
    AttachmentSource,
    Document,
    ErrorEvent,
    ImageSource,
    KnowledgeBase,
    QueryEvent,
    SearchDone,
    SearchEvent,
    SearchResult,
    SessionEvent,
    Sources,
    SourcesEvent,
    StepEvent,
    Submission,
    Task,
    TextSource,
    TokenEvent,
)
from eagle_rag.client.pages import PageHit, PageSearch
from eagle_rag.client.sessions import Message, Session
from eagle_rag.client.sync import EagleClient
from eagle_rag.client.transport import ClientConfig

__all__ = [
    "Answer",
    "AnswerDone",
    "AsyncEagleClient",
    "AttachmentSource",
    "ClientConfig",
    "Document",
    "EagleClient",
    "ErrorEvent",
    "ImageSource",
    "KnowledgeBase",
    "Message",
    "PageHit",
    "PageSearch",
    "QueryEvent",
    "Scope",
    "SearchDone",
    "SearchEvent",
    "SearchResult",
    "Session",
    "SessionEvent",
    "Sources",
    "SourcesEvent",
    "StepEvent",
    "Submission",
    "Task",
    "TextSource",
    "TokenEvent",
]
