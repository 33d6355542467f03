"""What Core's MCP tools declare besides their arguments: titles, behaviour hints and output
schemas (MCP 2025-06-18 ``annotations`` and ``outputSchema``).

Retrieval tools are read-only and idempotent. ``core_query`` writes its conversation to a
session (not read-only, not idempotent). ``core_ingest`` adds a document (the same bytes twice
are one document: idempotent), replaces the document of the same name when the content differs
(destructive: a client that approves non-destructive calls unasked must ask first) and may
fetch a URL (open world); ``core_create_knowledge_base`` makes a KB unless it exists
(idempotent). No other Core tool deletes or overwrites anything.
"""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer"}
_NUM = {"type": "number"}
_OBJ = {"type": "object"}
_NULLABLE_INT = {"type": ["integer", "null"]}
_NULLABLE_STR = {"type": ["string", "null"]}
_RELEVANCE = {"type": "number", "minimum": 0, "maximum": 1, "description": "relevance in [0, 1]"}

TEXT_SOURCE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "index": {**_INT, "description": "the [n] an answer cites"},
        "chunk_id": _STR,
        "document_id": _STR,
        "filename": _STR,
        "kb_name": _STR,
        "path": {**_STR, "description": "section path, e.g. Guide/Installation/Wiring"},
        "level": _NULLABLE_INT,
        "type": _STR,
        "page_nums": {"type": "array", "items": _INT},
        "content": _STR,
        "score": _RELEVANCE,
        "scores": {"type": "object", "additionalProperties": _NUM},
        "metadata": _OBJ,
    },
    "required": ["index", "chunk_id", "document_id", "path", "content", "score"],
}
IMAGE_SOURCE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "index": _INT,
        "chunk_id": _STR,
        "document_id": _STR,
        "filename": _STR,
        "kb_name": _STR,
        "image_id": _NULLABLE_STR,
        "page": _NULLABLE_INT,
        "chunk_type": _STR,
        "parent_section": _STR,
        "content_summary": _STR,
        "source_chunk_id": _NULLABLE_STR,
        "url": _NULLABLE_STR,
        "score": _RELEVANCE,
    },
    "required": ["index", "chunk_id", "document_id", "score"],
}
ATTACHMENT_SOURCE: dict[str, Any] = {
    "type": "object",
    "properties": {"index": _INT, "name": _STR},
    "required": ["index", "name"],
}
SOURCES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "array", "items": TEXT_SOURCE},
        "attachments": {"type": "array", "items": ATTACHMENT_SOURCE},
        "image": {"type": "array", "items": IMAGE_SOURCE},
    },
    "required": ["text", "image"],
}
PAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "page": {**_INT, "description": "1-based; open it with GET /documents/{id}/pages/{page}"},
        "score": _NUM,
        "evidence": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "citation": {**_INT, "description": "the passage's rank in the search"},
                    "chunk_id": _STR,
                    "type": _STR,
                    "path": _STR,
                    "text": _STR,
                    "boxes": {"type": "array", "items": _OBJ},
                },
            },
        },
    },
    "required": ["page", "score", "evidence"],
}
KNOWLEDGE_BASE: dict[str, Any] = {
    "type": "object",
    "properties": {"kb_name": _STR, "description": _STR, "documents": _INT},
    "required": ["kb_name", "documents"],
}

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "retrieve_text": {
        "type": "object",
        "properties": {"sources": {"type": "array", "items": TEXT_SOURCE}, "route": _OBJ},
        "required": ["sources"],
    },
    "retrieve_visual": {
        "type": "object",
        "properties": {"sources": {"type": "array", "items": IMAGE_SOURCE}},
        "required": ["sources"],
    },
    "best_pages": {
        "type": "object",
        "properties": {
            "document_id": _STR,
            "filename": _STR,
            "query": _STR,
            "pages": {"type": "array", "items": PAGE},
            "steps": {"type": "array", "items": _OBJ},
        },
        "required": ["document_id", "pages"],
    },
    "query": {
        "type": "object",
        "properties": {
            "session_id": _STR,
            "answer": {
                **_STR,
                "description": "the answer; [n] is the index of a source: text 1..T, then "
                "attachments, then images (one numbering)",
            },
            "sources": SOURCES,
            "warnings": {"type": "array", "items": _STR},
            "route": _OBJ,
            "steps": {"type": "array", "items": _OBJ},
        },
        "required": ["session_id", "answer", "sources"],
    },
    "ingest": {
        "type": "object",
        "properties": {
            "job_id": _STR,
            "document_id": _STR,
            "status": _STR,
            "dedup_hit": {"type": "boolean"},
        },
        "required": ["job_id", "document_id", "status", "dedup_hit"],
    },
    "create_knowledge_base": {
        "type": "object",
        "properties": {
            "kb_name": _STR,
            "description": _STR,
            "documents": _INT,
            "created": {"type": "boolean", "description": "false: it existed already"},
        },
        "required": ["kb_name", "description", "documents", "created"],
    },
    "list_knowledge_bases": {
        "type": "object",
        "properties": {"result": {"type": "array", "items": KNOWLEDGE_BASE}},
        "required": ["result"],
        "x-fastmcp-wrap-result": True,  # a list is sent as {"result": [...]} and unwrapped
    },
    "get_document": {
        "type": "object",
        "properties": {
            "document_id": _STR,
            "kb_name": _STR,
            "filename": _STR,
            "status": _STR,
            "pages": _NULLABLE_INT,
            "chunk_count": _INT,
            "metadata": _OBJ,
            "structure": _OBJ,
        },
        "required": ["document_id", "kb_name", "filename", "status", "structure"],
    },
}


def _hints(
    title: str, *, read_only: bool, idempotent: bool, open_world: bool, destructive: bool = False
) -> dict[str, Any]:
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    }


# A plugin tool its manifest declares: read-only retrieval over this instance's stores (ADR-008).
PLUGIN_TOOL_ANNOTATIONS: dict[str, Any] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}

ANNOTATIONS: dict[str, dict[str, Any]] = {
    "retrieve_text": _hints("Search passages", read_only=True, idempotent=True, open_world=False),
    "retrieve_visual": _hints(
        "Search page images", read_only=True, idempotent=True, open_world=False
    ),
    "best_pages": _hints(
        "Best pages of a document", read_only=True, idempotent=True, open_world=False
    ),
    "query": _hints("Answer with citations", read_only=False, idempotent=False, open_world=False),
    "ingest": _hints(
        "Add a document", read_only=False, idempotent=True, open_world=True, destructive=True
    ),
    "create_knowledge_base": _hints(
        "Create a knowledge base", read_only=False, idempotent=True, open_world=False
    ),
    "list_knowledge_bases": _hints(
        "List knowledge bases", read_only=True, idempotent=True, open_world=False
    ),
    "get_document": _hints("Show a document", read_only=True, idempotent=True, open_world=False),
}
