"""OpenAPI links: which response values feed which operations (create → get/delete).

A client (or a stateful API tester such as Schemathesis) reads them to chain calls with real
ids: the ``kb_name`` a created knowledge base answers with opens its detail, rebuild and delete;
an upload's ``job_id`` and ``document_id`` open the task and the document's views; an answer's
``session_id`` opens the session. They are added to the generated schema, by path and method,
so the routes stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

# (path, method) → parameter name → where its value comes from in the source's response.
Targets = dict[tuple[str, str], dict[str, str]]

_KB = {"kb_name": "$response.body#/kb_name"}
_TASK = {"job_id": "$response.body#/job_id"}
_DOCUMENT = {"document_id": "$response.body#/document_id"}
_SESSION = {"session_id": "$response.body#/session_id"}

_KB_TARGETS: Targets = {
    ("/knowledge_bases/{kb_name}", "get"): _KB,
    ("/knowledge_bases/{kb_name}/rebuild", "post"): _KB,
    ("/knowledge_bases/{kb_name}", "delete"): _KB,
}
_UPLOAD_TARGETS: Targets = {
    ("/tasks/{job_id}", "get"): _TASK,
    ("/tasks/{job_id}/retry", "post"): _TASK,
    ("/documents/{document_id}", "get"): _DOCUMENT,
    ("/documents/{document_id}/structure", "get"): _DOCUMENT,
    ("/documents/{document_id}/chunks", "get"): _DOCUMENT,
    ("/documents/{document_id}/file", "get"): _DOCUMENT,
    ("/documents/{document_id}", "delete"): _DOCUMENT,
}
_SESSION_TARGETS: Targets = {
    ("/sessions/{session_id}/messages", "get"): _SESSION,
    ("/sessions/{session_id}", "delete"): _SESSION,
}

# (source path, method, status) → the operations its response links to.
LINKS: dict[tuple[str, str, str], Targets] = {
    ("/knowledge_bases", "post", "201"): _KB_TARGETS,
    ("/knowledge_bases/{kb_name}", "get", "200"): _KB_TARGETS,
    ("/ingest", "post", "202"): _UPLOAD_TARGETS,
    ("/ingest", "post", "200"): _UPLOAD_TARGETS,  # a dedup hit names the existing document
    ("/query", "post", "200"): _SESSION_TARGETS,
}


def add_links(schema: dict[str, Any]) -> dict[str, Any]:
    """Add ``links`` to the source responses of ``schema`` (in place; idempotent).

    A source or target the schema lacks (a route not mounted) is left out, never invented.
    """
    paths = schema.get("paths", {})
    for (path, method, status), targets in LINKS.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        links = response.setdefault("links", {})
        for (target_path, target_method), parameters in targets.items():
            target = paths.get(target_path, {}).get(target_method)
            if target is None or "operationId" not in target:
                continue
            links[_link_name(target_path, target_method)] = {
                "operationId": target["operationId"],
                "parameters": {f"path.{k}": v for k, v in parameters.items()},
            }
    return schema


def install_links(app: FastAPI) -> None:
    """Make ``app.openapi()`` answer the generated schema with its links."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        return add_links(generate())

    app.openapi = openapi  # type: ignore[method-assign]


def _link_name(path: str, method: str) -> str:
    """``GET /documents/{document_id}/chunks`` → ``GetDocumentsChunks``: readable, unique."""
    words = [p for p in path.strip("/").split("/") if not p.startswith("{")]
    return method.capitalize() + "".join(
        w.replace("_", " ").title().replace(" ", "") for w in words
    )
