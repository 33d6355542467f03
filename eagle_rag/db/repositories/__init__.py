"""Repositories: the only code that touches ORM rows; each forces one plugin_namespace."""

from eagle_rag.db.repositories.documents import DocumentRepository
from eagle_rag.db.repositories.ingest_runs import IngestRunRepository
from eagle_rag.db.repositories.knowledge_bases import KnowledgeBaseRepository
from eagle_rag.db.repositories.mcp_calls import McpCallRepository
from eagle_rag.db.repositories.sessions import SessionRepository
from eagle_rag.db.repositories.tasks import TaskRepository

__all__ = [
    "DocumentRepository",
    "IngestRunRepository",
    "KnowledgeBaseRepository",
    "McpCallRepository",
    "SessionRepository",
    "TaskRepository",
]
