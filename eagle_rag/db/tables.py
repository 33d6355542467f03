"""SQLAlchemy tables. Every row carries ``plugin_namespace``; repositories set and filter it.

The same models run on SQLite and PostgreSQL: JSON becomes JSONB on PostgreSQL, timestamps are
stored with time zone, ids are strings (uuid4 hex) so they travel unchanged through URLs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

JsonType = JSON().with_variant(JSONB(), "postgresql")

# Deterministic constraint names, so migrations can refer to them on both databases.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JsonType, list[Any]: JsonType}


class _Timestamps:
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class KnowledgeBaseRow(_Timestamps, Base):
    __tablename__ = "knowledge_bases"
    __table_args__ = (UniqueConstraint("plugin_namespace", "name", name="uq_kb_namespace_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    plugin_namespace: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str] = mapped_column(String(64))
    engine: Mapped[str] = mapped_column(String(64), default="eagle")
    description: Mapped[str] = mapped_column(Text, default="")
    creation_settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    retrieval_settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    collections_used: Mapped[list[Any]] = mapped_column(default=list)


class DocumentRow(_Timestamps, Base):
    __tablename__ = "documents"
    __table_args__ = (
        # The dedup key; a unique constraint so two concurrent uploads cannot both win.
        UniqueConstraint("sha256", "kb_name", "plugin_namespace", name="uq_documents_dedup"),
        Index("ix_documents_ns_kb_status", "plugin_namespace", "kb_name", "status"),
        Index("ix_documents_ns_kb_filename", "plugin_namespace", "kb_name", "filename"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    plugin_namespace: Mapped[str] = mapped_column(String(64))
    kb_name: Mapped[str] = mapped_column(String(64))
    filename: Mapped[str] = mapped_column(String(512))
    mime_type: Mapped[str] = mapped_column(String(128))
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    pages: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    pipeline: Mapped[str | None] = mapped_column(String(64), nullable=True)
    object_key: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    source_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    structure: Mapped[dict[str, Any]] = mapped_column(default=dict)
    collections_used: Mapped[list[Any]] = mapped_column(default=list)
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class DocumentTagRow(Base):
    __tablename__ = "document_tags"
    __table_args__ = (Index("ix_document_tags_ns_tag", "plugin_namespace", "tag"),)

    document_id: Mapped[str] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )
    tag: Mapped[str] = mapped_column(String(64), primary_key=True)
    plugin_namespace: Mapped[str] = mapped_column(String(64))


class TaskRow(_Timestamps, Base):
    __tablename__ = "tasks"
    __table_args__ = (
        Index("ix_tasks_ns_status", "plugin_namespace", "status"),
        Index("ix_tasks_ns_status_lease", "plugin_namespace", "status", "lease_expires_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    plugin_namespace: Mapped[str] = mapped_column(String(64))
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    kb_name: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    phase: Mapped[str] = mapped_column(String(32), default="queued")
    progress_current: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    log: Mapped[list[Any]] = mapped_column(default=list)
    # The lease (migration 0002): who holds a queued or processing task, and until when. The
    # holder renews it while the task waits in its memory or runs; once it has expired (or its
    # owner's process is gone) anyone may re-queue the task. No expiry: the broker holds it.
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )
    # Attempts allowed before the task fails for good; a retry by hand raises it (None: the
    # setting ingest.max_attempts).
    max_attempts: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # False from completion until the vector store's next flush: Milvus Lite keeps unflushed
    # rows in memory, so a crash before the flush loses them; a start re-checks these tasks.
    vectors_flushed: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class ChatSessionRow(_Timestamps, Base):
    __tablename__ = "chat_sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    plugin_namespace: Mapped[str] = mapped_column(String(64), index=True)
    title: Mapped[str] = mapped_column(String(256), default="")
    kb_names: Mapped[list[Any]] = mapped_column(default=list)


class MessageRow(Base):
    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_session_seq", "session_id", "seq"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("chat_sessions.id", ondelete="CASCADE"))
    plugin_namespace: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    sources: Mapped[dict[str, Any]] = mapped_column(default=dict)
    steps: Mapped[list[Any]] = mapped_column(default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class McpCallRow(Base):
    __tablename__ = "mcp_calls"
    __table_args__ = (Index("ix_mcp_calls_ns_created", "plugin_namespace", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    plugin_namespace: Mapped[str] = mapped_column(String(64))
    tool: Mapped[str] = mapped_column(String(128))
    arguments: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16))
    duration_ms: Mapped[float] = mapped_column(default=0.0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
