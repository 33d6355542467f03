"""Language from the browser with a switch, 360 px wide screens, and keyboard use."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.server import RunningServer
from tests.chat_fakes import openai_model, sse
from tests.web.documents import MARKDOWN
from tests.web.helpers import kb_with_file
from tests.web.test_ui_flow import shot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def filled(server: RunningServer) -> RunningServer:
    kb_with_file(server, "guide", "guide.md", MARKDOWN)
    return server


def test_chinese_from_accept_language_and_the_switch(browser: Any, filled: RunningServer) -> None:
    context = browser.new_context(locale="zh-CN")
    try:
        page = context.new_page()
        page.goto(filled.url + "/")
        assert page.locator("html").get_attribute("lang") == "zh-CN"
        assert page.locator("header nav a").first.inner_text() == "知识库"
        page.wait_for_selector("#kb-list tr[data-kb='guide']")
        assert "文档" in page.locator("#kb-list thead").inner_text()
        shot(page, "knowledge-bases-zh")
        page.click("#lang-switch")
        page.wait_for_function("() => document.documentElement.lang === 'en'")
        assert page.locator("header nav a").first.inner_text() == "Knowledge bases"
        page.click("#lang-switch")
        page.wait_for_function("() => document.documentElement.lang === 'zh-CN'")
    finally:
        context.close()


def test_every_screen_fits_360_px(browser: Any, filled: RunningServer) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, locale="en-US")
    try:
        page = context.new_page()
        for path, ready in (
            ("/", "#kb-list tr[data-kb]"),
            ("/ui/kb/guide", "#doc-list tr[data-document]"),
            ("/ui/ask", "#kb-picker input"),
        ):
            page.goto(filled.url + path)
            page.wait_for_selector(ready)
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 360, (path, width)
        page.check("#kb-picker input[value='guide']")
        page.fill("#question", "How are solar panels cleaned?")
        page.click("#ask-form button[type=submit]")
        page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .cite")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 360
        shot(page, "ask-360px")
    finally:
        context.close()


def test_ask_and_open_a_citation_with_the_keyboard_only(
    browser: Any, filled: RunningServer
) -> None:
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        page.goto(filled.url + "/ui/ask")
        page.wait_for_selector("#kb-picker input[value='guide']")
        for _ in range(40):  # Tab until the KB checkbox, tick it with Space
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.value") == "guide":
                break
        if not page.is_checked("#kb-picker input[value='guide']"):
            page.keyboard.press("Space")
        for _ in range(10):
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.id") == "question":
                break
        assert page.evaluate("() => document.activeElement.id") == "question"
        page.keyboard.type("How is every frame grounded?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .cite")
        page.locator("#thread .cite").first.focus()  # reached by Tab like any button
        page.locator("#hovercard").wait_for(state="visible")
        assert "guide.md" in page.locator("#hovercard").inner_text()
        page.keyboard.press("Enter")
        page.locator("#preview").wait_for(state="visible")
        assert "grounding" in page.locator("#preview").inner_text().lower()
        page.keyboard.press("Escape")
        page.locator("#preview").wait_for(state="hidden")
    finally:
        context.close()


def _ask(page: Any, url: str, question: str) -> None:
    page.goto(url + "/ui/ask")
    page.check("#kb-picker input[value='guide']")
    page.fill("#question", question)
    page.press("#question", "Enter")
    page.wait_for_selector("#thread .msg.assistant:not([aria-busy])", timeout=60_000)


def test_a_model_failure_shows_the_error_event_and_no_citations(
    page: Any, filled: RunningServer
) -> None:
    def down(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return 500, {"content-type": "application/json"}, b'{"error": {"message": "down"}}'

    with openai_model(filled.eagle, down):
        _ask(page, filled.url, "How are solar panels cleaned?")
    error = page.locator("#thread .msg.assistant .error")
    assert error.is_visible() and "Error" in error.inner_text()
    assert page.locator("#thread .cite").count() == 0  # citations wait for `done`
    assert page.locator("#thread .steps li").count() >= 2  # the steps before the failure


def test_model_tokens_stream_in_and_citations_come_with_done(
    page: Any, filled: RunningServer
) -> None:
    reply = sse("Panels are cleaned ", "twice a year ", "with soft brushes [1].")
    with openai_model(filled.eagle, lambda body: reply):
        _ask(page, filled.url, "How are solar panels cleaned?")
    answer = page.locator("#thread .msg.assistant .answer")
    assert answer.inner_text().startswith("Panels are cleaned twice a year with soft brushes")
    assert answer.locator(".cite").count() == 1
    assert answer.locator(".cite").get_attribute("aria-label") == "Source 1: guide.md"
    assert any(s.startswith("generate") for s in page.locator(".steps li").all_inner_texts())
