"""Streams the UI reads: an event split across network chunks, a progress stream that drops,
an answer still streaming when the reader starts another conversation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.api.server import RunningServer
from tests.web.helpers import choose_files, upload_row, wait_status

pytestmark = pytest.mark.browser

# fetch() for one URL answers with a body sent in the given pieces, a pause between them.
CHUNKED_FETCH = """
([suffix, pieces]) => {
  const realFetch = window.fetch;
  window.fetch = async (url, options) => {
    if (!String(url).endsWith(suffix)) return realFetch(url, options);
    const left = [...pieces];
    const encoder = new TextEncoder();
    const body = new ReadableStream({ async pull(controller) {
      await new Promise((r) => setTimeout(r, 30));
      if (left.length) controller.enqueue(encoder.encode(left.shift()));
      else controller.close();
    } });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  };
}
"""


def fake_ingest(page: Any, job_id: str) -> None:
    """POST /ingest is accepted as ``job_id`` without reaching the server."""
    accepted = {"job_id": job_id, "document_id": "d", "status": "queued", "dedup_hit": False}
    page.route(
        re.compile(r"/ingest$"),
        lambda route: route.fulfill(status=202, json=accepted),
    )


def test_an_event_whose_crlf_is_split_between_chunks_is_still_read(
    page: Any, server: RunningServer
) -> None:
    working = {"status": "processing", "phase": "parse", "progress": {"current": 1, "total": 2}}
    finished = {"status": "completed", "phase": "done", "progress": {"current": 2, "total": 2}}
    pieces = [
        "event: progress\r",
        "\ndata: " + json.dumps(working) + "\r\n\r\n",
        "event: done\r",
        "\ndata: " + json.dumps(finished) + "\r",
        "\n\r",
        "\n",
    ]
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "split"}).status_code == 201
    page.goto(server.url + "/ui/kb/split")
    page.wait_for_selector("#dropzone")
    page.evaluate(CHUNKED_FETCH, ["/tasks/split-job/stream", pieces])
    fake_ingest(page, "split-job")
    choose_files(page, [("split.md", "text/markdown", b"# Split")])
    wait_status(page, "split.md", "completed", timeout=10_000)
    assert upload_row(page, "split.md").get_attribute("data-phases") == "parse,done"


def answer_stream(session_id: str, answer: str) -> str:
    done = {"answer": answer, "session_id": session_id, "sources": {"text": [], "image": []}}
    return (
        f"event: session\ndata: {json.dumps({'session_id': session_id})}\n\n"
        f"event: done\ndata: {json.dumps(done)}\n\n"
    )


@pytest.mark.parametrize("leave", ["new chat", "reopen"])
def test_an_answer_still_streaming_stays_out_of_the_next_conversation(
    page: Any, server: RunningServer, leave: str
) -> None:
    with server.client() as client:
        client.post("/knowledge_bases", json={"kb_name": "chats"})
    held: list[Any] = []
    asked: list[dict[str, Any]] = []

    def answer(route: Any) -> None:
        asked.append(json.loads(route.request.post_data))
        if len(asked) == 1:
            held.append(route)  # the first answer is still streaming
        else:
            route.fulfill(body=answer_stream("second", "Second."), content_type="text/event-stream")

    page.route(re.compile(r"/query/stream$"), answer)
    page.route(
        re.compile(r"/sessions/elsewhere/messages$"), lambda r: r.fulfill(json={"messages": []})
    )
    page.goto(server.url + "/ui/ask")
    page.check("#kb-picker input[value='chats']")
    page.fill("#question", "First question")
    page.press("#question", "Enter")
    while not held:
        page.wait_for_timeout(20)
    if leave == "new chat":
        page.click("#new-chat")
    else:
        page.evaluate(
            """() => { const b = document.createElement('button');
                 b.className = 'session'; b.dataset.session = 'elsewhere'; b.dataset.kbs = 'chats';
                 document.body.append(b); b.click(); b.remove(); }"""
        )
    page.wait_for_function("() => !document.querySelector('#thread .msg')")
    page.wait_for_timeout(200)  # the reopened conversation has loaded
    held[0].fulfill(body=answer_stream("first", "First."), content_type="text/event-stream")
    page.wait_for_timeout(300)  # the first answer's events are read by now
    assert page.locator("#thread .msg").count() == 0
    page.check("#kb-picker input[value='chats']")
    page.fill("#question", "Second question")
    page.press("#question", "Enter")
    page.wait_for_selector("#thread .msg.assistant:not([aria-busy])")
    # The conversation left behind, not the one the first answer belonged to.
    assert asked[1].get("session_id") == (None if leave == "new chat" else "elsewhere")
    assert page.locator("#thread .msg.user").all_inner_texts() == ["You\nSecond question"]


def test_a_first_question_left_unanswered_leaves_no_session_for_the_next(
    page: Any, server: RunningServer
) -> None:
    """The server deletes the session a failed first turn opened; the page kept its id, and
    every later question was "session not found" until New conversation."""
    with server.client() as client:
        client.post("/knowledge_bases", json={"kb_name": "fails"})
    asked: list[dict[str, Any]] = []

    def answer(route: Any) -> None:
        asked.append(json.loads(route.request.post_data))
        if len(asked) == 1:
            failed = {"code": "backend_unavailable", "message": "the chat model is down"}
            body = (
                f"event: session\ndata: {json.dumps({'session_id': 'opened'})}\n\n"
                f"event: error\ndata: {json.dumps(failed)}\n\n"
            )
        else:
            body = answer_stream("second", "Second.")
        route.fulfill(body=body, content_type="text/event-stream")

    page.route(re.compile(r"/query/stream$"), answer)
    page.goto(server.url + "/ui/ask")
    page.check("#kb-picker input[value='fails']")
    finished = (
        "n => document.querySelectorAll('#thread .msg.assistant:not([aria-busy])').length >= n"
    )
    for count, question in enumerate(("First question", "Second question"), start=1):
        page.fill("#question", question)
        page.press("#question", "Enter")
        page.wait_for_function(finished, arg=count)
    assert len(asked) == 2 and "session_id" not in asked[1]


@pytest.mark.parametrize("drop", ["ends without done", "connection lost"])
def test_an_upload_whose_progress_stream_drops_reconnects_until_it_is_done(
    page: Any, server: RunningServer, drop: str
) -> None:
    kb = "drops-" + drop.split()[0]
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
    claimed = {"status": "processing", "phase": "parse", "progress": {"current": 0, "total": 0}}
    streams: list[str] = []

    def first_drops(route: Any) -> None:
        streams.append(route.request.url)
        if len(streams) > 1:
            route.fallback()  # the server is back: its own stream
        elif drop == "connection lost":
            route.abort("connectionreset")
        else:
            body = "event: progress\ndata: " + json.dumps(claimed) + "\n\n"
            route.fulfill(body=body, content_type="text/event-stream")

    page.route(re.compile(r"/tasks/[^/]+/stream$"), first_drops)
    page.goto(server.url + f"/ui/kb/{kb}")
    page.wait_for_selector("#dropzone")
    choose_files(page, [("dropped.md", "text/markdown", b"# Dropped\n\nThe stream came back.")])
    wait_status(page, "dropped.md", "completed", timeout=20_000)
    page.wait_for_selector("#doc-list tr[data-document]")  # the list was refreshed, too
    assert page.errors == []


def test_leaving_while_files_wait_to_be_sent_asks_first(page: Any, server: RunningServer) -> None:
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "leaving"}).status_code == 201
    page.route(re.compile(r"/ingest$"), lambda route: None)  # still being sent
    page.goto(server.url + "/ui/kb/leaving")
    page.wait_for_selector("#dropzone")
    choose_files(page, [(f"wait{n}.md", "text/markdown", b"# Wait") for n in range(5)])
    page.click("h1")  # browsers ask only on a page the reader has used
    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)
    assert asked.value.type == "beforeunload"
    asked.value.dismiss()
