"""Each REST call once, as data: method, path and body, built from typed arguments.

Both clients send these; so the wire contract (field names, defaults left to the server) lives
in one place.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

from eagle_rag.errors import InvalidInputError

Mode = Literal["dense", "sparse", "hybrid"]
FileLike = str | Path | bytes | BinaryIO


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP request; ``files`` holds uploads already read into memory, so a retry can
    send them again."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    data: Mapping[str, str] | None = None
    files: Mapping[str, tuple[str, bytes, str]] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """Arguments for ``httpx.Client.build_request``."""
        out: dict[str, Any] = {"params": _drop_none(self.params) if self.params else None}
        if self.json is not None:
            out["json"] = self.json
        if self.data is not None:
            out["data"] = dict(self.data)
        if self.files is not None:
            out["files"] = dict(self.files)
        if self.headers:
            out["headers"] = dict(self.headers)
        return out


@dataclass(frozen=True, slots=True)
class Scope:
    """What a search or an answer looks at: KBs, documents, tags and metadata filters."""

    kb_names: Sequence[str] = ()
    document_ids: Sequence[str] = ()
    tags: Sequence[str] = ()
    filters: Mapping[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kb_names": list(self.kb_names)}
        if self.document_ids:
            body["document_ids"] = list(self.document_ids)
        if self.tags:
            body["tags"] = list(self.tags)
        if self.filters:
            body["filters"] = dict(self.filters)
        return body


def scope_of(kb: str | Sequence[str] | None, **rest: Any) -> Scope:
    """A scope from one KB name or several (the ``kb_name`` / ``kb_names`` of REST)."""
    names: Sequence[str] = () if kb is None else (kb,) if isinstance(kb, str) else tuple(kb)
    return Scope(names, **{k: v for k, v in rest.items() if v is not None})


def split_scope(options: dict[str, Any]) -> dict[str, Any]:
    """Take the scope's keywords out of ``options`` (the rest goes into the body)."""
    return {k: options.pop(k) for k in ("document_ids", "tags", "filters") if k in options}


def search_call(
    query: str,
    scope: Scope,
    *,
    top_k: int | None = None,
    mode: Mode | None = None,
    rerank: bool | None = None,
    expand_parents: bool | None = None,
    with_images: bool | None = None,
    token_budget: int | None = None,
    score_threshold: float | None = None,
    stream: bool = False,
) -> Call:
    body = {
        "query": query,
        **scope.body(),
        **_drop_none(
            {
                "top_k": top_k,
                "mode": mode,
                "rerank": rerank,
                "expand_parents": expand_parents,
                "with_images": with_images,
                "token_budget": token_budget,
                "score_threshold": score_threshold,
            }
        ),
    }
    return Call("POST", "/search/stream" if stream else "/search", json=body)


def query_call(
    question: str,
    scope: Scope,
    *,
    session_id: str | None = None,
    top_k: int | None = None,
    top_n: int | None = None,
    language: Literal["zh", "en"] | None = None,
    mode: Mode | None = None,
    rerank: bool | None = None,
    with_images: bool | None = None,
    stream: bool = False,
) -> Call:
    body = {
        "query": question,
        **scope.body(),
        **_drop_none(
            {
                "session_id": session_id,
                "top_k": top_k,
                "top_n": top_n,
                "language": language,
                "mode": mode,
                "rerank": rerank,
                "with_images": with_images,
            }
        ),
    }
    return Call("POST", "/query/stream" if stream else "/query", json=body)


def create_kb_call(
    kb_name: str,
    *,
    description: str = "",
    engine: str | None = None,
    creation_settings: Mapping[str, Any] | None = None,
    retrieval_settings: Mapping[str, Any] | None = None,
) -> Call:
    body: dict[str, Any] = {"kb_name": kb_name, "description": description}
    if engine:
        body["engine"] = engine
    if creation_settings:
        body["creation_settings"] = dict(creation_settings)
    if retrieval_settings:
        body["retrieval_settings"] = dict(retrieval_settings)
    return Call("POST", "/knowledge_bases", json=body)


def ingest_call(
    kb_name: str,
    file: FileLike | None = None,
    *,
    url: str | None = None,
    filename: str | None = None,
    mime_type: str | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> Call:
    """A multipart upload of ``file`` (a path, bytes or an open binary file), or a ``url``."""
    if (file is None) == (url is None):
        raise InvalidInputError("give exactly one of file or url", field="file")
    data = {"kb_name": kb_name}
    if tags:
        data["tags"] = json.dumps(list(tags))
    if metadata:
        data["metadata"] = json.dumps(dict(metadata))
    if url is not None:
        return Call("POST", "/ingest", data={**data, "url": url})
    name, content = _read(file, filename)  # type: ignore[arg-type]
    guessed = mimetypes.guess_type(name)[0]
    upload = (name, content, mime_type or guessed or "application/octet-stream")
    return Call("POST", "/ingest", data=data, files={"file": upload})


def documents_call(
    kb_name: str | None, status: str | None, tag: str | None, limit: int, offset: int
) -> Call:
    params = {"kb_name": kb_name, "status": status, "tag": tag, "limit": limit, "offset": offset}
    return Call("GET", "/documents", params=params)


def _read(file: FileLike, filename: str | None) -> tuple[str, bytes]:
    if isinstance(file, str | Path):
        path = Path(file)
        try:
            return filename or path.name, path.read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    if isinstance(file, bytes):
        return filename or "upload", file
    content = file.read()
    return filename or Path(str(getattr(file, "name", "upload"))).name, content


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
