"""LangChain's EagleRetriever: a real LCEL chain (retriever → prompt → ChatOpenAI → parser) with
a local chat model, sync and async."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_openai import ChatOpenAI

from eagle_rag.integrations.langchain import EagleRetriever, documents_of
from tests.adapters.conftest import KEY
from tests.adapters.extractive_chat import extractive_chat
from tests.adapters.test_llamaindex_retriever import visual_result
from tests.api.server import RunningServer

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the numbered sources only and cite them as [n]."),
        ("human", "Sources:\n{context}\n\nQuestion: {question}"),
    ]
)


def cited(documents: list[Document]) -> str:
    return "\n".join(f"[{d.metadata['citation']}] {d.page_content}" for d in documents)


def test_chain_answers_with_cited_text(server: RunningServer, corpus: dict[str, str]) -> None:
    retriever = EagleRetriever(kb_names=["energy"], base_url=server.url, api_key=KEY, top_k=3)
    with extractive_chat() as (chat_url, recorded):
        model = ChatOpenAI(base_url=chat_url, api_key="x", model="local", max_retries=0)
        chain = (
            {"context": retriever | cited, "question": RunnablePassthrough()}
            | PROMPT
            | model
            | StrOutputParser()
        )
        answer = chain.invoke("How many bolts per bracket?")
    assert "Use eight bolts per bracket." in answer and "[1]" in answer
    sent = recorded.requests[0][1]["messages"][-1]["content"]
    assert "[1] Mount the panels on the roof" in sent


async def test_async_chain_and_scope(server: RunningServer, corpus: dict[str, str]) -> None:
    retriever = EagleRetriever(
        kb_names=["energy"], base_url=server.url, api_key=KEY, filters={"year": 2023}
    )
    documents = await retriever.ainvoke("scope of the audit")
    assert documents and {d.metadata["filename"] for d in documents} == {"report.pdf"}
    top = documents[0]
    assert top.id == top.metadata["chunk_id"] and top.metadata["page_nums"] == [2]
    assert top.metadata["path"].endswith("1.1 Scope") and 0 <= top.metadata["score"] <= 1
    assert top.metadata["document_id"] == corpus["report.pdf"]
    with extractive_chat() as (chat_url, _):
        model = ChatOpenAI(base_url=chat_url, api_key="x", model="local", max_retries=0)
        chain = (
            {"context": retriever | cited, "question": RunnablePassthrough()}
            | PROMPT
            | model
            | StrOutputParser()
        )
        answer = await chain.ainvoke("What does the scope section cover?")
    assert "This section covers the scope" in answer
    both = EagleRetriever(kb_names=["energy", "garden"], base_url=server.url, api_key=KEY, top_k=10)
    kbs = {d.metadata["kb_name"] for d in both.invoke("steel brackets and tomatoes")}
    assert kbs == {"energy", "garden"}
    one = EagleRetriever(kb_names="garden", eagle_tags="veg", base_url=server.url, api_key=KEY)
    assert one.kb_names == ["garden"] and one.eagle_tags == ["veg"]  # one name each
    one.eagle_tags = []
    assert {d.metadata["kb_name"] for d in one.invoke("tomatoes")} == {"garden"}


def test_visual_hits_are_image_documents() -> None:
    documents = documents_of(visual_result())
    assert [d.metadata["type"] for d in documents] == ["text", "image"]
    assert documents[1].page_content == "Wiring diagram of the inverter"
    assert documents[1].metadata["image_id"] == "img-1" and documents[1].metadata["page"] == 4
    assert [d.metadata["citation"] for d in documents] == [1, 2]  # one sequence, as /query's


class RunTags(BaseCallbackHandler):
    """The run tags LangChain hands a tracer when a retriever starts."""

    def __init__(self) -> None:
        self.seen: list[list[str] | None] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.seen.append(kwargs.get("tags"))


def test_tracing_tags_and_eagle_tags_are_apart(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    """``tags`` is LangChain's run tags (it used to be Eagle's filter: a tracing tag emptied the
    results); Eagle's document-tag filter is ``eagle_tags``, and it reaches no tracer."""
    traced = EagleRetriever(
        kb_names="energy", base_url=server.url, api_key=KEY, top_k=3, tags=["production"]
    )
    handler = RunTags()
    documents = traced.invoke("How many bolts per bracket?", config={"callbacks": [handler]})
    assert documents and handler.seen == [["production"]]
    howto = EagleRetriever(
        kb_names="energy", base_url=server.url, api_key=KEY, eagle_tags="howto", top_k=10
    )
    handler = RunTags()
    found = howto.invoke("steel brackets and audit scope", config={"callbacks": [handler]})
    assert found and {d.metadata["filename"] for d in found} == {"solar.md"}
    assert handler.seen == [[]]
