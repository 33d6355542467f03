"""Frozen records that repositories return: ORM rows never leave the repository."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import regex

from eagle_rag.errors import InvalidInputError

DocumentStatus = Literal["pending", "processing", "completed", "failed", "deleted"]
TaskStatus = Literal["queued", "processing", "completed", "failed"]
DOCUMENT_STATUSES: tuple[str, ...] = ("pending", "processing", "completed", "failed", "deleted")
TASK_STATUSES: tuple[str, ...] = ("queued", "processing", "completed", "failed")

KB_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Word characters with their combining marks ("हिन्दी": a vowel sign is no word character to \w)
# and the numbers \w also counts.
TAG = regex.compile(r"^[\w\p{M}\p{No}.-][\w\p{M}\p{No} .:/-]{0,63}$")


def validate_kb_name(name: str) -> str:
    """A KB name is a scalar filter value and a key part, so it is kept to a safe alphabet."""
    # fullmatch: with match, "$" also matched before a final newline ("abc\n" was a name).
    if not isinstance(name, str) or not KB_NAME.fullmatch(name):
        raise InvalidInputError(
            "kb_name must be 1-64 lower-case letters, digits, '_' or '-', starting with a "
            f"letter or digit ({KB_NAME.pattern})",
            kb_name=str(name)[:80],
        )
    return name


def validate_json_text(value: Any, field: str) -> None:
    """Every string in ``value`` (keys too) must be valid Unicode: a lone surrogate (JSON's
    ``"\\ud800"``) stored in a document's metadata failed it at the vector store and then broke
    every listing of its KB; in a KB's settings it failed the request with a 500."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{field} holds text that is not valid Unicode (a lone surrogate)", field=field
        ) from None


def validate_tag(tag: str) -> str:
    """The tag in NFC (so "café" typed decomposed is the tag stored composed), or
    InvalidInputError."""
    if isinstance(tag, str):
        tag = unicodedata.normalize("NFC", tag)
    if not isinstance(tag, str) or not TAG.fullmatch(tag):
        raise InvalidInputError(
            "tag must be 1-64 word characters, spaces or .:/-", tag=str(tag)[:80]
        )
    return tag


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything leaving the repositories is UTC-aware."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class KnowledgeBaseRecord:
    id: str
    namespace: str
    name: str
    engine: str
    description: str
    creation_settings: Mapping[str, Any]
    retrieval_settings: Mapping[str, Any]
    collections_used: tuple[str, ...]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    id: str
    namespace: str
    kb_name: str
    filename: str
    mime_type: str
    sha256: str
    size: int
    status: str
    pages: int | None = None
    pipeline: str | None = None
    object_key: str | None = None
    source_url: str | None = None
    structure: Mapping[str, Any] = field(default_factory=dict)
    collections_used: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    chunk_count: int = 0
    error: str | None = None
    tags: tuple[str, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TaskRecord:
    id: str
    namespace: str
    document_id: str
    kb_name: str
    status: str
    phase: str
    progress_current: int
    progress_total: int
    attempts: int
    error: str | None
    log: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    max_attempts: int | None = None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    namespace: str
    title: str
    kb_names: tuple[str, ...]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class MessageRecord:
    id: str
    session_id: str
    seq: int
    role: str
    content: str
    sources: Mapping[str, Any]
    steps: tuple[Any, ...]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class McpCallRecord:
    id: str
    namespace: str
    tool: str
    arguments: Mapping[str, Any]
    status: str
    duration_ms: float
    error: str | None
    created_at: datetime
