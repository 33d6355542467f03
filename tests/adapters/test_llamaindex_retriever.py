"""LlamaIndex's EagleRetriever: a real RetrieverQueryEngine over it, with a local chat model."""

from __future__ import annotations

from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import ImageNode, TextNode
from llama_index.llms.openai_like import OpenAILike

from eagle_rag.client import SearchResult
from eagle_rag.integrations.llamaindex import EagleRetriever, nodes_of
from eagle_rag.retrieval.pack import Passage
from eagle_rag.retrieval.wire import split_sources
from tests.adapters.conftest import KEY
from tests.adapters.extractive_chat import extractive_chat
from tests.api.server import RunningServer


def test_query_engine_answers_with_cited_text(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    retriever = EagleRetriever("energy", base_url=server.url, api_key=KEY, top_k=3)
    with extractive_chat() as (chat_url, recorded):
        llm = OpenAILike(model="local", api_base=chat_url, api_key="x", is_chat_model=True)
        engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
        response = engine.query("How is the inverter connected?")
    assert "Connect the inverter with copper cables." in str(response)
    assert recorded.requests  # the model saw the prompt LlamaIndex built
    top = response.source_nodes[0]
    assert isinstance(top.node, TextNode) and 0.0 <= (top.score or 0) <= 1.0
    assert top.node.metadata["path"] == "Solar Guide/Installation/Wiring"
    assert top.node.metadata["citation"] == 1
    assert top.node.node_id == top.node.metadata["chunk_id"]
    assert top.node.metadata["document_id"] == corpus["solar.md"]
    assert top.node.metadata["citation_label"].startswith("[1] solar.md · Solar Guide")
    seen = top.node.get_content(metadata_mode="llm")  # type: ignore[arg-type]
    assert "chunk_id" not in seen and "start_offset" not in seen and "chunk_index" not in seen
    assert top.node.metadata["section_title"] in seen and top.node.metadata["truncated"] is False


async def test_async_retrieval_with_scope_and_filters(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    both = EagleRetriever(["energy", "garden"], base_url=server.url, api_key=KEY, top_k=10)
    found = await both.aretrieve("steel brackets and tomatoes")
    assert {n.node.metadata["kb_name"] for n in found} == {"energy", "garden"}
    only_2023 = EagleRetriever(
        "energy", base_url=server.url, api_key=KEY, filters={"year": 2023}, top_k=10
    )
    pages = await only_2023.aretrieve("scope of the audit")
    assert {n.node.metadata["filename"] for n in pages} == {"report.pdf"}
    assert pages[0].node.metadata["page_nums"] == [2]
    sync = only_2023.retrieve("scope of the audit")
    assert [n.node.node_id for n in sync] == [n.node.node_id for n in pages]
    # One document id as a str is that document (not one id per character).
    one = EagleRetriever(
        "energy", base_url=server.url, api_key=KEY, document_ids=corpus["report.pdf"]
    )
    assert {n.node.metadata["filename"] for n in one.retrieve("scope of the audit")} == {
        "report.pdf"
    }


def visual_result() -> SearchResult:
    """A search answer with one passage and one figure, shaped by the server's own wire code
    (no visual encoder runs offline, so no live search returns a figure here)."""
    figure = Passage(
        1,
        "fig-1",
        "Wiring diagram of the inverter",
        "Guide/Wiring",
        (4,),
        "doc-1",
        "guide.pdf",
        "energy",
        "eagle_visual",
        "figure",
        0.01,
        {"dense": 0.8, "relevance": 0.9},
        {"image_id": "img-1", "fields": {}},
    )
    text = Passage(
        2,
        "c-1",
        "Connect the inverter.",
        "Guide/Wiring",
        (4,),
        "doc-1",
        "guide.pdf",
        "energy",
        "eagle_text",
        "text",
        0.01,
        {"relevance": 0.7},
        {},
    )
    return SearchResult.from_json({"sources": split_sources([text, figure])})


def test_visual_hits_are_image_nodes() -> None:
    nodes = nodes_of(visual_result())
    assert [type(n.node) for n in nodes] == [TextNode, ImageNode]
    image = nodes[1]
    assert image.score == 0.9 and image.node.get_content() == "Wiring diagram of the inverter"
    assert image.node.metadata["image_id"] == "img-1" and image.node.metadata["page"] == 4
    assert image.node.metadata["path"] == "Guide/Wiring" and nodes[0].score == 0.7
    assert image.node.metadata["image_url"] == "/images/img-1"
    assert image.node.metadata["page_nums"] == [4]
    # One sequence, as /query numbers them: the figure follows the passage, not a second [1].
    assert [n.node.metadata["citation"] for n in nodes] == [1, 2]
