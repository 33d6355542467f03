"""What the framework retrievers share: the search they make, and one metadata layout for a
source, so a LlamaIndex node and a LangChain document carry the same keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from eagle_rag.client import AsyncEagleClient, ClientConfig, EagleClient, ImageSource, TextSource
from eagle_rag.client.models import SearchResult

# Ids, raw scores, where to fetch a picture and where a chunk sits in its document's text help
# a program, not a model reading the context.
HIDDEN_FROM_LLM = (
    "chunk_id",
    "document_id",
    "scores",
    "boxes",
    "kb_name",
    "type",
    "image_id",
    "image_url",
    "truncated",
    "chunk_index",
    "start_offset",
    "end_offset",
)


@dataclass(frozen=True, slots=True)
class EagleSearch:
    """A search's scope and options: KBs, filters and the rest of ``POST /search``."""

    kb_names: Sequence[str] = ()
    top_k: int = 5
    filters: Mapping[str, Any] | None = None
    tags: Sequence[str] = ()
    document_ids: Sequence[str] = ()
    mode: Literal["dense", "sparse", "hybrid"] | None = None
    rerank: bool | None = None
    with_images: bool = False
    score_threshold: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        return {
            "top_k": self.top_k,
            "filters": dict(self.filters) if self.filters else None,
            "tags": list(self.tags) or None,
            "document_ids": list(self.document_ids) or None,
            "mode": self.mode,
            "rerank": self.rerank,
            "with_images": self.with_images or None,
            "score_threshold": self.score_threshold,
            **self.extra,
        }

    def run(self, client: EagleClient, query: str) -> SearchResult:
        return client.search(query, list(self.kb_names) or None, **self.options())

    async def arun(self, config: ClientConfig, query: str) -> SearchResult:
        # A client per call: an httpx AsyncClient belongs to the event loop that first used it.
        async with AsyncEagleClient(config=config) as client:
            return await client.search(query, list(self.kb_names) or None, **self.options())


def config_of(base_url: str | None, api_key: str | None, **options: Any) -> ClientConfig:
    """A client config from explicit values, else ``EAGLE_SERVER_URL`` / ``EAGLE_API_KEY``."""
    return ClientConfig.from_env(base_url=base_url, api_key=api_key, **options)


def text_metadata(source: TextSource) -> dict[str, Any]:
    """A passage's citation metadata: where it is (file, section path, pages) and its number."""
    pages = ",".join(map(str, source.page_nums))
    where = f"{source.filename} · {source.path}" + (f" · p. {pages}" if pages else "")
    return {
        **{k: v for k, v in source.metadata.items() if _plain(v)},
        "citation": source.index,
        "citation_label": f"[{source.index}] {where}",
        "filename": source.filename,
        "path": source.path,
        "page_nums": list(source.page_nums),
        "level": source.level,
        "kb_name": source.kb_name,
        "document_id": source.document_id,
        "chunk_id": source.chunk_id,
        "type": source.type,
        "truncated": source.truncated,
        "score": source.score,
        "scores": dict(source.scores),
        "boxes": [dict(b) for b in source.boxes],
    }


def image_metadata(source: ImageSource, texts: int) -> dict[str, Any]:
    """A visual hit's anchors: its page and section, and the image id to fetch it by. Its
    ``citation`` follows the ``texts`` passages' numbers, as ``/query`` numbers images: a search
    numbers text and images each from 1, and two sources in one context must not both be 1."""
    return {
        "citation": texts + source.index,
        "filename": source.filename,
        "path": source.parent_section,
        "page": source.page,
        "page_nums": list(source.page_nums) or ([source.page] if source.page else []),
        "caption": source.caption,
        "image_url": source.url,
        "kb_name": source.kb_name,
        "document_id": source.document_id,
        "chunk_id": source.chunk_id,
        "image_id": source.image_id,
        "type": "image",
        "chunk_type": source.chunk_type,
        "score": source.score,
        "scores": dict(source.scores),
    }


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None
