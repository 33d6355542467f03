"""EagleClient against a real server: every resource, typed results, streams and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle_rag.client import (
    AnswerDone,
    AttachmentSource,
    EagleClient,
    PageHit,
    SearchDone,
    SessionEvent,
    SourcesEvent,
    StepEvent,
    Task,
    TokenEvent,
)
from eagle_rag.errors import (
    AuthenticationError,
    BackendUnavailableError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    UnsupportedMediaTypeError,
)
from tests.api.server import RunningServer, free_port
from tests.client.conftest import KEY, SCOPED_KEY
from tests.retrieval.conftest import CHINESE


@pytest.fixture
def client(server: RunningServer) -> EagleClient:
    return EagleClient(server.url, api_key=KEY)


def test_knowledge_bases_and_documents(client: EagleClient, corpus: dict[str, str]) -> None:
    kbs = {kb.kb_name: kb for kb in client.list_knowledge_bases()}
    assert kbs["energy"].documents == 2 and kbs["energy"].description == "solar"
    assert client.get_knowledge_base("garden").documents == 1
    # Pages, as list_documents has them: one KB at a time, in name order, none twice.
    names = sorted(kbs)
    paged = [
        kb.kb_name
        for i in range(len(names))
        for kb in client.list_knowledge_bases(limit=1, offset=i)
    ]
    assert paged == names and client.list_knowledge_bases(limit=1, offset=len(names)) == []

    documents = {d.filename: d for d in client.list_documents("energy")}
    assert set(documents) == {"solar.md", "report.pdf"}
    report = client.get_document(corpus["report.pdf"])
    assert [key for key in report.raw if not hasattr(report, key)] == []  # all typed
    assert len(report.sha256) == 64 and report.created_at and report.collections_used
    assert report.pages == 3 and report.status == "completed" and report.chunk_count > 0
    assert documents["solar.md"].tags == ("howto",)
    assert client.document_structure(corpus["solar.md"])
    chunks = client.document_chunks(corpus["solar.md"])
    assert any("copper cables" in c["text"] for c in chunks)
    assert client.list_documents("energy", tag="howto")[0].filename == "solar.md"


def test_ingest_reports_progress_then_delete(client: EagleClient, tmp_path: Path) -> None:
    client.create_knowledge_base("scratch")
    path = tmp_path / "zh.md"
    path.write_text(CHINESE)
    job = client.ingest("scratch", path, metadata={"lang": "zh"}, tags="zh")  # one tag
    seen: list[Task] = []
    final = client.wait_for_task(job.job_id, on_progress=seen.append)
    assert final.status == "completed" and final.fraction == 1.0
    assert seen[-1] == final and all(t.job_id == job.job_id for t in seen)
    assert client.get_task(job.job_id).log  # the task's log comes with a single task
    with pytest.raises(ConflictError):  # a finished task cannot be cancelled
        client.cancel_task(job.job_id)
    again = client.ingest("scratch", path)
    assert again.dedup_hit and again.document_id == job.document_id

    document = client.get_document(job.document_id)
    assert document.metadata["lang"] == "zh" and document.filename == "zh.md"
    assert document.tags == ("zh",)  # not ("h", "z"): a str is one tag
    assert client.delete_document(job.document_id) is True
    with pytest.raises(NotFoundError):
        client.get_document(job.document_id)
    client.delete_knowledge_base("scratch")
    with pytest.raises(NotFoundError):
        client.get_knowledge_base("scratch")


def test_search_is_typed_and_scored(client: EagleClient, corpus: dict[str, str]) -> None:
    result = client.search("inverter copper cables", "energy", top_k=3)
    top = result.sources.text[0]
    assert top.path == "Solar Guide/Installation/Wiring" and "copper" in top.content
    assert top.document_id == corpus["solar.md"] and top.index == 1
    assert all(0.0 <= s.score <= 1.0 for s in result.sources.text)
    assert "dense" in top.scores or "sparse" in top.scores
    assert result.steps and result.kb_names == ("energy",)

    strict = client.search("inverter copper cables", "energy", top_k=3, score_threshold=0.5)
    assert strict.sources.text and all(s.score >= 0.5 for s in strict.sources.text)
    assert len(strict.sources.text) < len(result.sources.text)
    assert [s.index for s in strict.sources.text] == list(range(1, len(strict.sources.text) + 1))

    # Every field the server sends is a typed attribute (``truncated`` and ``collection`` were
    # dropped), and the body stays in ``raw`` for fields a newer server adds.
    assert [key for key in top.raw if not hasattr(top, key)] == []
    assert [key for key in result.raw if not hasattr(result, key)] == []
    budget = client.search("inverter copper cables", "energy", top_k=5, token_budget=20)
    assert budget.truncated and budget.token_count is not None and budget.token_count <= 20
    assert top.truncated is False and top.collection == "eagle_text"

    both = client.search("steel brackets tomatoes", ["energy", "garden"], top_k=10)
    assert {s.kb_name for s in both.sources.text} == {"energy", "garden"}
    filtered = client.search("brackets", "energy", tags=["howto"])
    assert {s.filename for s in filtered.sources.text} == {"solar.md"}
    one = client.search("brackets", "energy", tags="howto", document_ids=corpus["solar.md"])
    assert [s.chunk_id for s in one.sources.text] == [s.chunk_id for s in filtered.sources.text]


def test_streams_are_typed_events(client: EagleClient, corpus: dict[str, str]) -> None:
    events = list(client.search_stream("inverter", "energy", top_k=2))
    assert isinstance(events[0], StepEvent) and isinstance(events[-1], SearchDone)
    assert any(isinstance(e, SourcesEvent) for e in events)
    assert events[-1].result.sources.text[0].kb_name == "energy"

    answer_events = list(client.query_stream("How is the inverter connected?", "energy"))
    assert isinstance(answer_events[0], SessionEvent)
    tokens = "".join(e.delta for e in answer_events if isinstance(e, TokenEvent))
    done = answer_events[-1]
    assert isinstance(done, AnswerDone) and done.answer.answer == tokens
    assert "[1]" in tokens and done.answer.sources.text[0].path.endswith("Wiring")

    follow = client.query("And what converts direct current?", session_id=done.answer.session_id)
    assert follow.session_id == done.answer.session_id and "[" in follow.answer


def test_errors_are_the_error_tree(server: RunningServer, corpus: dict[str, str]) -> None:
    with EagleClient(server.url, api_key=KEY) as client:
        with pytest.raises(NotFoundError) as missing:
            client.get_knowledge_base("nope")
        assert missing.value.fields["status"] == 404
        with pytest.raises(ConflictError):
            client.create_knowledge_base("energy")
        with pytest.raises(InvalidInputError) as invalid:
            client.search("x", "energy", top_k=1000)
        assert invalid.value.fields["remote_code"] == "invalid_request"
        with pytest.raises(UnsupportedMediaTypeError):
            client.ingest("energy", b"GIF89a" + b"\0" * 64, filename="a.gif")  # GIF: unsupported
        with pytest.raises(InvalidInputError, match="exactly one"):
            client.ingest("energy")
    with (
        EagleClient(server.url, api_key="wrong") as stranger,
        pytest.raises(AuthenticationError, match="unknown API key"),
    ):
        stranger.list_knowledge_bases()
    with EagleClient(server.url, api_key=SCOPED_KEY) as scoped:
        assert [kb.kb_name for kb in scoped.list_knowledge_bases()] == ["garden"]
        with pytest.raises(PermissionDeniedError):
            scoped.search("inverter", "energy")
        with pytest.raises(PermissionDeniedError):
            list(scoped.query_stream("inverter", "energy"))
    with (
        EagleClient(f"http://127.0.0.1:{free_port()}", max_retries=0) as nobody,
        pytest.raises(BackendUnavailableError, match="did not answer"),
    ):
        nobody.list_knowledge_bases()
    with pytest.raises(InvalidInputError, match="http"):
        EagleClient("ftp://example.org")


def test_best_pages_of_one_document(client: EagleClient, corpus: dict[str, str]) -> None:
    report = corpus["report.pdf"]
    found = client.best_pages(report, "scope of the audit", top_k=2)
    assert found.document_id == report and found.filename == "report.pdf"
    assert isinstance(found.pages[0], PageHit) and found.pages[0].page == 2
    assert len(found.pages) <= 2 and found.pages[0].score >= found.pages[-1].score
    assert "audit" in found.pages[0].evidence[0]["text"] and found.steps
    with EagleClient(client.config.base_url, api_key=SCOPED_KEY) as scoped:
        with pytest.raises(NotFoundError) as hidden:  # a document of a KB it may not use
            scoped.best_pages(report, "audit")
        with pytest.raises(NotFoundError) as missing:
            scoped.best_pages("no-such-document", "audit")
        assert str(hidden.value).replace(report, "no-such-document") == str(missing.value)


def test_an_answer_numbers_text_attachments_and_images_in_one_sequence(
    client: EagleClient, corpus: dict[str, str]
) -> None:
    notes = {"name": "notes.txt", "text": "Bring the copper cables on Monday."}
    answer = client.query("How is the inverter wired?", "energy", top_n=2, attachments=[notes])
    texts = answer.sources.text
    assert [s.index for s in texts] == list(range(1, len(texts) + 1))
    [attached] = answer.sources.attachments
    assert attached == AttachmentSource(len(texts) + 1, "notes.txt")
    assert answer.sources.cited(attached.index) == attached
    assert answer.sources.cited(1) == texts[0] and answer.sources.cited(99) is None
    assert [s.index for s in answer.sources.image] == [
        len(texts) + 2 + i for i in range(len(answer.sources.image))
    ]
    found = client.search("inverter", "energy")
    assert found.sources.attachments == () and found.sources.text[0].index == 1


def test_sessions_continue_list_and_delete(client: EagleClient, corpus: dict[str, str]) -> None:
    """A chat agent keeps its conversations through the client, not by hand with httpx."""
    first = client.query("How is the inverter wired?", "energy")
    client.query("And the brackets?", "energy", session_id=first.session_id)
    session = next(s for s in client.list_sessions() if s.session_id == first.session_id)
    assert session.kb_names == ("energy",) and session.title.startswith("How is the inverter")
    turns = client.session_messages(first.session_id)
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[1].content == first.answer and turns[1].sources.text == first.sources.text
    with EagleClient(client.config.base_url, api_key=SCOPED_KEY) as scoped:
        assert first.session_id not in {s.session_id for s in scoped.list_sessions()}
        with pytest.raises(NotFoundError):
            scoped.session_messages(first.session_id)
    assert client.delete_session(first.session_id) is True
    with pytest.raises(NotFoundError):
        client.session_messages(first.session_id)
    jobs = client.rebuild_knowledge_base("garden")
    assert [j.document_id for j in jobs] == [corpus["garden.md"]]
    assert client.wait_for_task(jobs[0].job_id, timeout_s=120).status == "completed"


def test_ids_with_slashes_or_dots_stay_in_their_own_path_segment(
    client: EagleClient, corpus: dict[str, str]
) -> None:
    """An id is one path segment: ``../knowledge_bases/victim`` used to reach (and delete) KB
    ``victim``; now each is a 404 for a document or task of that name."""
    client.create_knowledge_base("victim")
    with pytest.raises(NotFoundError):
        client.delete_document("../knowledge_bases/victim")
    with pytest.raises(NotFoundError):
        client.get_document("../knowledge_bases")
    with pytest.raises(NotFoundError):
        client.get_task("../documents")
    for odd in ("..", ".", "a/b", "a?b=c", "a#b", "a%2Fb"):
        with pytest.raises(NotFoundError):
            client.get_document(odd)
        with pytest.raises(NotFoundError):
            client.get_knowledge_base(odd)
    assert client.get_knowledge_base("victim").kb_name == "victim"
    client.delete_knowledge_base("victim")
