"""AsyncEagleClient against the same real server: the calls adapters make, and their errors."""

from __future__ import annotations

import pytest

from eagle_rag.client import AnswerDone, AsyncEagleClient, SearchDone, TokenEvent
from eagle_rag.errors import NotFoundError, PermissionDeniedError
from tests.api.server import RunningServer
from tests.client.conftest import KEY, SCOPED_KEY
from tests.retrieval.conftest import SOLAR


async def test_async_flow(server: RunningServer, corpus: dict[str, str]) -> None:
    async with AsyncEagleClient(server.url, api_key=KEY) as client:
        await client.create_knowledge_base("async-kb")
        job = await client.ingest("async-kb", SOLAR.encode(), filename="guide.md")
        phases = [task.status async for task in client.task_progress(job.job_id)]
        assert phases[-1] == "completed"

        found = await client.search("copper inverter", "async-kb", top_k=2)
        assert found.sources.text[0].filename == "guide.md"
        assert 0.0 < found.sources.text[0].score <= 1.0
        events = [e async for e in client.search_stream("copper inverter", "async-kb")]
        assert isinstance(events[-1], SearchDone)

        answer = await client.query("How is the inverter wired?", "async-kb")
        assert "[1]" in answer.answer
        turns = await client.session_messages(answer.session_id)
        assert [t.content for t in turns] == ["How is the inverter wired?", answer.answer]
        assert answer.session_id in {s.session_id for s in await client.list_sessions()}
        assert await client.delete_session(answer.session_id) is True
        stream = [e async for e in client.query_stream("Which bolts?", "async-kb")]
        assert any(isinstance(e, TokenEvent) for e in stream)
        assert isinstance(stream[-1], AnswerDone)
        assert [d.filename for d in await client.list_documents("async-kb")] == ["guide.md"]
        first = await client.list_knowledge_bases(limit=1)
        assert [kb.kb_name for kb in first] == ["async-kb"]  # names sort "async-kb" first
        second = await client.list_knowledge_bases(limit=1, offset=1)
        assert [kb.kb_name for kb in second] == ["energy"]
        await client.delete_knowledge_base("async-kb")
        with pytest.raises(NotFoundError):
            await client.search("x", "async-kb")
    async with AsyncEagleClient(server.url, api_key=SCOPED_KEY) as scoped:
        with pytest.raises(PermissionDeniedError, match="energy"):
            await scoped.query("x", "energy")
        with pytest.raises(NotFoundError, match="document not found") as hidden:
            await scoped.best_pages(corpus["report.pdf"], "audit")  # a document of energy
        assert "energy" not in str(hidden.value)


async def test_async_best_pages(server: RunningServer, corpus: dict[str, str]) -> None:
    async with AsyncEagleClient(server.url, api_key=KEY) as client:
        found = await client.best_pages(
            corpus["report.pdf"], "steady demand next year", mode="sparse"
        )
    assert found.pages[0].page == 3 and found.query == "steady demand next year"


async def test_async_ids_stay_in_their_own_path_segment(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    async with AsyncEagleClient(server.url, api_key=KEY) as client:
        with pytest.raises(NotFoundError):
            await client.delete_document("../knowledge_bases/energy")
        with pytest.raises(NotFoundError):
            await client.delete_session("../sessions")
        with pytest.raises(NotFoundError):
            await client.best_pages("../" + corpus["report.pdf"], "audit")
        assert (await client.get_knowledge_base("energy")).documents == 2
