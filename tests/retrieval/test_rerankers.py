"""The HTTP reranker against a local server speaking TEI, Cohere/Jina and DashScope shapes."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from eagle_rag.errors import (
    BackendUnavailableError,
    InvalidInputError,
    ModelProviderError,
    SettingsError,
)
from eagle_rag.models.rerankers import HttpReranker, build_reranker
from eagle_rag.settings import RerankSettings
from tests.http_fakes import json_answer, serve


def overlap(query: str, document: str) -> float:
    """A real relevance function for the fake: shared words over query words."""
    words = set(re.findall(r"\w+", query.lower()))
    return len(words & set(re.findall(r"\w+", document.lower()))) / max(len(words), 1)


def rerank_server(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    """Answers in the shape of the style the request is written in."""
    if "texts" in body:  # TEI
        scores = [overlap(body["query"], t) for t in body["texts"]]
        return json_answer(200, [{"index": i, "score": s} for i, s in enumerate(scores)])
    if "input" in body:  # DashScope
        docs = body["input"]["documents"]
        results = [
            {"index": i, "relevance_score": overlap(body["input"]["query"], d)}
            for i, d in enumerate(docs)
        ]
        return json_answer(200, {"output": {"results": results}, "request_id": "r1"})
    results = [  # Cohere / Jina: sorted by relevance, cut at top_n
        {"index": i, "relevance_score": overlap(body["query"], d)}
        for i, d in enumerate(body["documents"])
    ]
    results.sort(key=lambda r: -r["relevance_score"])
    return json_answer(200, {"results": results[: body["top_n"]]})


DOCS = ["the cat sat", "solar inverter wiring guide", "inverter"]


@pytest.mark.parametrize("style", ["tei", "cohere", "jina", "dashscope"])
def test_every_style_scores_each_document(style: str) -> None:
    with serve(rerank_server) as (url, recorded):
        reranker = HttpReranker(url=url + "/rerank", style=style, model="m", api_key="k")
        scores = reranker.rerank("inverter wiring", DOCS)
    assert scores == pytest.approx([0.0, 1.0, 0.5])
    path, body, headers = recorded.requests[0]
    assert path == "/rerank" and headers["authorization"] == "Bearer k"
    if style in ("cohere", "jina"):
        assert body == {"model": "m", "query": "inverter wiring", "documents": DOCS, "top_n": 3}
    if style == "dashscope":
        assert body["input"] == {"query": "inverter wiring", "documents": DOCS}


def test_documents_an_api_leaves_out_rank_last() -> None:
    def partial(*_: Any) -> Any:
        return json_answer(200, {"results": [{"index": 1, "relevance_score": 0.9}]})

    with serve(partial) as (url, _):
        scores = HttpReranker(url=url).rerank("q", DOCS)
    assert scores[1] == 0.9 and scores[0] == scores[2] == float("-inf")


@pytest.mark.parametrize(
    "body",
    [
        {"results": [{"index": 7, "relevance_score": 0.1}]},
        {"results": [{"index": 0}]},
        {"output": {}},
        {"results": [{"index": 0, "relevance_score": "NaN"}]},
    ],
)
def test_malformed_answers_are_provider_errors(body: Any) -> None:
    with (
        serve(lambda *_: json_answer(200, body)) as (url, _),
        pytest.raises(ModelProviderError, match="malformed"),
    ):
        HttpReranker(url=url).rerank("q", DOCS)


def test_auth_failure_is_not_retried() -> None:
    with (
        serve(lambda *_: json_answer(401, {"error": "bad key"})) as (url, recorded),
        pytest.raises(ModelProviderError, match="401"),
    ):
        HttpReranker(url=url, max_retries=3, sleep=lambda s: None).rerank("q", DOCS)
    assert len(recorded.requests) == 1


def test_overload_is_retried_then_reported_unavailable() -> None:
    with (
        serve(lambda *_: json_answer(503, {"error": "busy"})) as (url, recorded),
        pytest.raises(BackendUnavailableError, match="kept failing"),
    ):
        HttpReranker(url=url, max_retries=2, sleep=lambda s: None).rerank("q", DOCS)
    assert len(recorded.requests) == 3


def test_a_slow_server_times_out() -> None:
    def slow(*_: Any) -> Any:
        time.sleep(0.5)
        return json_answer(200, {"results": []})

    with serve(slow) as (url, _):
        reranker = HttpReranker(url=url, timeout_s=0.1, max_retries=0)
        with pytest.raises(BackendUnavailableError, match="timed out"):
            reranker.rerank("q", DOCS)


def test_too_many_documents_are_refused_before_calling() -> None:
    with pytest.raises(InvalidInputError, match="at most 2"):
        HttpReranker(url="http://127.0.0.1:9", max_documents=2).rerank("q", DOCS)


def test_settings_choose_the_reranker() -> None:
    assert build_reranker(RerankSettings()) is None
    reranker = build_reranker(
        RerankSettings(provider="http", style="tei", url="http://127.0.0.1:9/rerank")
    )
    assert reranker is not None and reranker.style == "tei"

    with pytest.raises(SettingsError, match=r"needs models\.rerank\.url"):
        build_reranker(RerankSettings(provider="http"))
