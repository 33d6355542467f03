"""What the UI shows when something is gone or refused: in place, said once, no dead ends."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from eagle_rag.web.i18n import ZH
from tests.api.server import RunningServer, running_server
from tests.web.helpers import choose_files, upload_row, wait_status

pytestmark = pytest.mark.browser

GONE = "Knowledge base “{}” was not found. It may have been deleted."


def test_a_kb_deleted_while_its_page_is_open_says_so_in_place(
    page: Any, server: RunningServer
) -> None:
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "doomed"}).status_code == 201
    page.goto(server.url + "/ui/kb/doomed")
    page.wait_for_selector("#doc-list:not([aria-busy]) h2")
    with server.client() as client:  # deleted from another tab
        assert client.delete("/knowledge_bases/doomed").status_code in (200, 204)
    page.evaluate("() => htmx.trigger(document.body, 'docs-changed')")

    failed = page.locator("#doc-list[data-failed='404']")
    failed.wait_for()
    assert failed.locator(".error").inner_text() == GONE.format("doomed")
    assert failed.locator("a[href='/']").count() == 1
    assert "Loading" not in failed.inner_text()
    assert page.locator("#dropzone, #upload-card, #url-form").count() == 0  # no live upload zone
    assert page.locator("#notice").inner_text() == ""  # said once, where the list was
    assert page.errors == []

    response = page.goto(server.url + "/ui/kb/doomed")
    assert response.status == 404
    assert page.locator("#not-found").inner_text() == GONE.format("doomed")


def test_uploads_say_their_status_once_and_refusals_offer_no_retry(
    page: Any, server: RunningServer
) -> None:
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "strict"}).status_code == 201
    page.goto(server.url + "/ui/kb/strict")
    page.wait_for_selector("#dropzone")
    choose_files(page, [("empty.md", "text/markdown", b"")])  # refused with a 400
    wait_status(page, "empty.md", "failed")
    refused = upload_row(page, "empty.md")
    assert refused.locator(".reason").inner_text().strip()
    assert refused.locator("button.retry").count() == 0  # the same bytes fail the same way

    choose_files(
        page,
        [
            ("fine.md", "text/markdown", b"# Fine\n\nThe pump primes in ten seconds."),
            ("broken.pdf", "application/pdf", b"%PDF-1.7\nnot really a pdf\n"),
        ],
    )
    wait_status(page, "fine.md", "completed")
    wait_status(page, "broken.pdf", "failed")
    for name, status in (("fine.md", "completed"), ("broken.pdf", "failed")):
        row = upload_row(page, name)
        said = row.locator(".badge").inner_text() + " " + row.locator(".phase").inner_text()
        assert said.split().count(status) == 1, said
    # Accepted, then failed in the pipeline: a retry may pass (a worker or a backend was down).
    assert upload_row(page, "broken.pdf").locator("button.retry").count() == 1
    assert page.errors == []


KEY = "errors-admin-0123456789"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [{"name": "admin", "key": KEY}]
    with running_server(
        tmp_path_factory.mktemp("errors"), server={"api_keys": keys, "rate_limit_per_minute": 0}
    ) as running:
        yield running


def test_behind_keys_an_unknown_kb_is_told_by_its_fragment(
    browser: Any, secured: RunningServer
) -> None:
    """The shell cannot look the KB up (no key with a page request): its fragment's 404 says it."""
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        page.goto(secured.url + "/ui/kb/nowhere")
        page.locator("#key-dialog").wait_for(state="visible")
        page.fill("#key-input", KEY)
        page.press("#key-input", "Enter")
        failed = page.locator("#doc-list[data-failed='404']:not([aria-busy])")
        failed.wait_for()
        assert failed.locator(".error").inner_text() == GONE.format("nowhere")
        assert page.locator("#dropzone").count() == 0
    finally:
        context.close()


def test_a_task_just_claimed_shows_one_state_not_processing_queued(
    page: Any, server: RunningServer
) -> None:
    """A worker has taken the task (processing) but has not reported a phase yet (still queued)."""
    claimed = {"status": "processing", "phase": "queued", "progress": {"current": 0, "total": 0}}
    stream = "event: progress\ndata: " + json.dumps(claimed) + "\n\n"
    page.route(
        re.compile(r"/tasks/[^/]+/stream$"),
        lambda route: route.fulfill(body=stream, content_type="text/event-stream"),
    )
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "claimed"}).status_code == 201
    page.goto(server.url + "/ui/kb/claimed")
    page.wait_for_selector("#dropzone")
    choose_files(page, [("claimed.md", "text/markdown", b"# Claimed\n\nA worker has it.")])
    wait_status(page, "claimed.md", "processing")
    row = upload_row(page, "claimed.md")
    assert row.locator(".badge").inner_text() == "processing"
    assert row.locator(".phase").inner_text() == ""


def test_in_chinese_a_refusal_is_named_in_chinese_before_the_servers_words(
    browser: Any, server: RunningServer
) -> None:
    """The server's messages are English; a zh screen named its failures in English only."""
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": "zh-refusals"}).status_code == 201
        said = client.post(
            "/ingest",
            data={"kb_name": "zh-refusals"},
            files={"file": ("tool.exe", b"MZ\x90\x00" + bytes(64), "application/octet-stream")},
        ).json()
    assert said["code"] == "unsupported_media_type"
    context = browser.new_context(locale="zh-CN")
    try:
        page = context.new_page()
        page.goto(server.url + "/ui/kb/zh-refusals")
        page.wait_for_selector("#dropzone")
        choose_files(page, [("tool.exe", "application/octet-stream", b"MZ\x90\x00" + bytes(64))])
        wait_status(page, "tool.exe", "failed")
        reason = upload_row(page, "tool.exe").locator(".reason").inner_text()
        assert reason == ZH["err_unsupported_media_type"] + "：" + said["message"]
    finally:
        context.close()
