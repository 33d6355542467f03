"""The retrieval options are declared once (RetrievalOptions) and build the same QueryRequest
for every surface; plain arguments (MCP, CLI) get clear errors naming the field."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from eagle_rag.api.routes.search import _answer_request
from eagle_rag.api.schemas import QueryBody, RetrievalOptions, SearchBody
from eagle_rag.errors import InvalidInputError
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings


def test_every_option_reaches_the_query_request() -> None:
    body = SearchBody(
        query="inverter",
        kb_name="a",
        kb_names=["b", "a"],
        document_ids=["d1"],
        tags=["t"],
        filters={"year": 2021},
        top_k=7,
        mode="sparse",
        rerank=False,
        expand_parents=True,
        token_budget=300,
        with_images=True,
        retrieval_settings={"a": {"score_threshold": 0.2}},
        plugin_namespace="core",
    )
    assert body.query_request() == QueryRequest(
        "inverter",
        kb_names=("a", "b"),
        document_ids=("d1",),
        tags=("t",),
        filters={"year": 2021},
        top_k=7,
        mode="sparse",
        rerank=False,
        expand_parents=True,
        token_budget=300,
        with_images=True,
        retrieval_settings={"a": {"score_threshold": 0.2}},
    )


def test_search_and_answer_bodies_share_the_options() -> None:
    options = set(RetrievalOptions.model_fields)
    assert options <= set(SearchBody.model_fields) and options <= set(QueryBody.model_fields)
    assert QueryBody(query="q").top_k == 10 and SearchBody(query="q").top_k == 5


def test_an_answer_recalls_the_configured_depth_unless_the_body_names_one() -> None:
    """``generation.top_k`` was read by MCP and the CLI but not by /query, which recalled 10."""
    app = SimpleNamespace(settings=load_settings({}, overrides={"generation": {"top_k": 3}}))

    def recall_depth(**body: Any) -> int:
        request = asyncio.run(_answer_request(app, QueryBody(query="q", **body)))  # type: ignore[arg-type]
        return request.recall.top_k

    assert recall_depth() == 3
    assert recall_depth(top_k=10) == 10 and recall_depth(top_k=25) == 25


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"top_k": 0}, "top_k"),
        ({"mode": "fuzzy"}, "mode"),
        ({"kb_names": "not-a-list"}, "kb_names"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_plain_arguments_get_an_error_naming_the_field(
    values: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        RetrievalOptions.checked(**values)
    assert caught.value.fields["field"] == field
    assert caught.value.message.startswith(f"{field}: ")


def test_none_arguments_take_the_defaults() -> None:
    options = RetrievalOptions.checked(kb_names=None, filters=None, top_k=None)
    assert options.query_request("q") == QueryRequest("q")
