"""LangChain: ``EagleRetriever``, a ``BaseRetriever`` over an Eagle-RAG server.

    retriever = EagleRetriever(kb_names=["handbook"], base_url="http://127.0.0.1:8000")
    docs = retriever.invoke("How is the inverter wired?")   # or await retriever.ainvoke(...)

Each text source becomes a ``Document`` (id = the chunk id, ``page_content`` = the passage,
metadata = file, section path, pages, citation number and label, relevance ``score`` in [0, 1]
and raw ``scores``); visual hits (``with_images=True``) follow as documents of type ``image``
whose content is the image's summary.

Eagle's document-tag filter is ``eagle_tags``; ``tags`` stays LangChain's run tags (tracing).
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from eagle_rag.client import ClientConfig, EagleClient, SearchResult
from eagle_rag.integrations.common import EagleSearch, config_of, image_metadata, text_metadata


class EagleRetriever(BaseRetriever):
    """Retrieves cited passages (and, if asked, page images) from Eagle-RAG knowledge bases."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kb_names: list[str] = Field(default_factory=list)
    base_url: str | None = None
    api_key: str | None = None
    top_k: int = 5
    filters: dict[str, Any] | None = None
    # Not ``tags``: that is BaseRetriever's own field, the run tags callbacks and tracing see.
    eagle_tags: list[str] = Field(default_factory=list)
    document_ids: list[str] = Field(default_factory=list)
    mode: Literal["dense", "sparse", "hybrid"] | None = None
    rerank: bool | None = None
    with_images: bool = False
    score_threshold: float | None = None
    config: ClientConfig | None = None

    _client: EagleClient | None = PrivateAttr(default=None)

    @field_validator("kb_names", "eagle_tags", "document_ids", mode="before")
    @classmethod
    def _one_or_several(cls, value: Any) -> Any:
        """One name or several, as the LlamaIndex retriever and the client take them."""
        return [value] if isinstance(value, str) else value

    def _config(self) -> ClientConfig:
        if self.config is None:
            self.config = config_of(self.base_url, self.api_key)
        return self.config

    def _eagle_search(self) -> EagleSearch:
        return EagleSearch(
            tuple(self.kb_names),
            top_k=self.top_k,
            filters=self.filters,
            tags=tuple(self.eagle_tags),
            document_ids=tuple(self.document_ids),
            mode=self.mode,
            rerank=self.rerank,
            with_images=self.with_images,
            score_threshold=self.score_threshold,
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self._client is None:
            self._client = EagleClient(config=self._config())
        return documents_of(self._eagle_search().run(self._client, query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return documents_of(await self._eagle_search().arun(self._config(), query))


def documents_of(result: SearchResult) -> list[Document]:
    """Text sources, then visual hits, in rank order, numbered in one sequence."""
    texts = len(result.sources.text)
    documents = [
        Document(id=t.chunk_id, page_content=t.content, metadata=text_metadata(t))
        for t in result.sources.text
    ]
    documents += [
        Document(id=i.chunk_id, page_content=i.content_summary, metadata=image_metadata(i, texts))
        for i in result.sources.image
    ]
    return documents
