"""Rerankers: score (query, passage) pairs with a cross-encoder service.

There is no offline cross-encoder (MODELS.md), so the only implementation is an HTTP client for
``/rerank``-style APIs. Their request and response shapes differ, so a small table of styles maps
one call onto each: TEI (``{query, texts}`` → ``[{index, score}]``), Cohere and Jina and vLLM
(``{model, query, documents, top_n}`` → ``{results: [{index, relevance_score}]}``) and DashScope
(``{model, input: {query, documents}, parameters}`` → ``{output: {results: [...]}}``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx

from eagle_rag.errors import InvalidInputError, SettingsError
from eagle_rag.models.http_json import JsonEndpoint
from eagle_rag.settings import RerankSettings


class Reranker(Protocol):
    """Scores each document for the query; higher is better, one score per document."""

    name: str

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]: ...


def _tei_request(model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
    return {"query": query, "texts": list(documents), "truncate": True}


def _cohere_request(model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
    return {"model": model, "query": query, "documents": list(documents), "top_n": len(documents)}


def _dashscope_request(model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
    return {
        "model": model,
        "input": {"query": query, "documents": list(documents)},
        "parameters": {"top_n": len(documents), "return_documents": False},
    }


def _tei_results(body: Any) -> Any:
    return body


def _cohere_results(body: Any) -> Any:
    return body["results"]


def _dashscope_results(body: Any) -> Any:
    return body["output"]["results"]


_STYLES: dict[str, tuple[Callable[..., dict[str, Any]], Callable[[Any], Any], str]] = {
    # style: (request builder, results extractor, score key)
    "tei": (_tei_request, _tei_results, "score"),
    "cohere": (_cohere_request, _cohere_results, "relevance_score"),
    "jina": (_cohere_request, _cohere_results, "relevance_score"),
    "dashscope": (_dashscope_request, _dashscope_results, "relevance_score"),
}


class HttpReranker:
    """A remote reranker of one of the supported API styles, with retries and timeouts."""

    def __init__(
        self,
        *,
        url: str,
        style: str = "cohere",
        model: str = "",
        api_key: str = "",
        timeout_s: float = 15.0,
        max_retries: int = 2,
        max_documents: int = 100,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if style not in _STYLES:
            raise SettingsError(f"unknown rerank style {style!r}", style=style)
        self.name = f"{style}:{model or url}"
        self.style = style
        self.model = model
        self.max_documents = max_documents
        self._endpoint = JsonEndpoint(
            url,
            backend="rerank",
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
        )

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        if len(documents) > self.max_documents:
            raise InvalidInputError(
                f"a rerank call takes at most {self.max_documents} documents",
                documents=len(documents),
            )
        build, extract, score_key = _STYLES[self.style]
        body = self._endpoint.post(build(self.model, query, documents))
        scores = [-math.inf] * len(documents)  # documents an API leaves out rank last
        try:
            for item in extract(body):
                index = int(item["index"])
                score = float(item[score_key])
                if not 0 <= index < len(documents) or not math.isfinite(score):
                    raise ValueError(f"result index {index} or score {score} is out of range")
                scores[index] = score
        except (KeyError, TypeError, ValueError) as exc:
            raise self._endpoint.malformed(exc) from exc
        return scores

    def close(self) -> None:
        self._endpoint.close()


def build_reranker(config: RerankSettings) -> HttpReranker | None:
    """The configured reranker, or None when the fused order is kept."""
    if config.provider == "none":
        return None
    if not config.url:
        raise SettingsError("the http rerank provider needs models.rerank.url")
    return HttpReranker(
        url=config.url,
        style=config.style,
        model=config.model,
        api_key=config.api_key.get_secret_value(),
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
        max_documents=config.max_documents,
    )
