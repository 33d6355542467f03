"""All the metadata repositories of one namespace, built together."""

from __future__ import annotations

from dataclasses import dataclass

from eagle_rag.db.database import Database
from eagle_rag.db.repositories.documents import DocumentRepository
from eagle_rag.db.repositories.ingest_runs import IngestRunRepository
from eagle_rag.db.repositories.knowledge_bases import KnowledgeBaseRepository
from eagle_rag.db.repositories.mcp_calls import McpCallRepository
from eagle_rag.db.repositories.sessions import SessionRepository
from eagle_rag.db.repositories.tasks import TaskRepository


@dataclass(frozen=True, slots=True)
class Repositories:
    """The metadata repositories of one namespace (each forces that plugin_namespace)."""

    knowledge_bases: KnowledgeBaseRepository
    documents: DocumentRepository
    tasks: TaskRepository
    sessions: SessionRepository
    mcp_calls: McpCallRepository
    ingest_runs: IngestRunRepository

    @classmethod
    def for_namespace(cls, db: Database, namespace: str) -> Repositories:
        return cls(
            KnowledgeBaseRepository(db, namespace),
            DocumentRepository(db, namespace),
            TaskRepository(db, namespace),
            SessionRepository(db, namespace),
            McpCallRepository(db, namespace),
            IngestRunRepository(db, namespace),
        )
