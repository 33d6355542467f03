"""LlamaIndex: ``EagleRetriever``, a ``BaseRetriever`` over an Eagle-RAG server.

    retriever = EagleRetriever(kb_names=["handbook"], base_url="http://127.0.0.1:8000")
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)

Each text source becomes a ``NodeWithScore`` holding a ``TextNode`` (id = the chunk id,
metadata = file, section path, pages, citation number and label, scores); each visual hit (with
``with_images=True``) an ``ImageNode`` whose text is the image's summary. The score is Eagle-RAG's
relevance in [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import ImageNode, NodeWithScore, QueryBundle, TextNode

from eagle_rag.client import ClientConfig, EagleClient, SearchResult
from eagle_rag.client.calls import names_of
from eagle_rag.integrations.common import (
    HIDDEN_FROM_LLM,
    EagleSearch,
    config_of,
    image_metadata,
    text_metadata,
)


class EagleRetriever(BaseRetriever):
    """Retrieves cited passages (and, if asked, page images) from Eagle-RAG knowledge bases."""

    def __init__(
        self,
        kb_names: str | Sequence[str] = (),  # one KB name or several; tags, ids likewise
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        top_k: int = 5,
        filters: Mapping[str, Any] | None = None,
        tags: str | Sequence[str] = (),
        document_ids: str | Sequence[str] = (),
        mode: Literal["dense", "sparse", "hybrid"] | None = None,
        rerank: bool | None = None,
        with_images: bool = False,
        score_threshold: float | None = None,
        config: ClientConfig | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._config = config or config_of(base_url, api_key)
        self._client = EagleClient(config=self._config)
        self._search = EagleSearch(
            names_of(kb_names),
            top_k=top_k,
            filters=filters,
            tags=names_of(tags),
            document_ids=names_of(document_ids),
            mode=mode,
            rerank=rerank,
            with_images=with_images,
            score_threshold=score_threshold,
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return nodes_of(self._search.run(self._client, query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return nodes_of(await self._search.arun(self._config, query_bundle.query_str))

    def close(self) -> None:
        self._client.close()


def nodes_of(result: SearchResult) -> list[NodeWithScore]:
    """Text sources as text nodes, then visual hits as image nodes, in rank order."""
    nodes: list[NodeWithScore] = []
    for text in result.sources.text:
        node = TextNode(
            id_=text.chunk_id,
            text=text.content,
            metadata=text_metadata(text),
            excluded_llm_metadata_keys=[*HIDDEN_FROM_LLM, "score", "level"],
            excluded_embed_metadata_keys=list(HIDDEN_FROM_LLM),
        )
        nodes.append(NodeWithScore(node=node, score=text.score))
    for image in result.sources.image:
        visual = ImageNode(
            id_=image.chunk_id,
            text=image.content_summary,
            metadata=image_metadata(image, len(result.sources.text)),
            excluded_llm_metadata_keys=[*HIDDEN_FROM_LLM, "score", "chunk_type"],
        )
        nodes.append(NodeWithScore(node=visual, score=image.score))
    return nodes
