"""Ask page details: a stale error goes, a superseded preview stops, steps explain themselves,
and closing the preview does not reopen the hovercard."""

from __future__ import annotations

import re
from typing import Any

import pytest

from eagle_rag.index.collections import DENSE_FIELD, TEXT_COLLECTION, text_fields
from eagle_rag.index.filters import eq
from tests.api.server import RunningServer
from tests.chat_fakes import openai_model, sse
from tests.web.documents import paragraph_box, text_pdf
from tests.web.helpers import kb_with_file

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def manual(server: RunningServer) -> RunningServer:
    """One KB with a two-page PDF whose first chunk spans both pages (the others one each)."""
    document = kb_with_file(server, "manual", "manual.pdf", text_pdf())
    span_two_pages(server, document)
    return server


def span_two_pages(server: RunningServer, doc_id: str) -> None:
    """Make the document's first chunk one that runs on across the page break, as a long
    paragraph does: pages 1 and 2, a box on each."""
    vectors = server.eagle.vectors
    rows = vectors.query(
        TEXT_COLLECTION, eq("document_id", doc_id), output_fields=[*text_fields(), DENSE_FIELD]
    )
    first = min((r for r in rows if r["type"] == "text"), key=lambda r: r["chunk_index"])
    first["page_nums"] = [1, 2]
    boxes = [{"page": p, "bbox": paragraph_box()} for p in (1, 2)]
    first["metadata"] = {**(first.get("metadata") or {}), "boxes": boxes}
    vectors.upsert(TEXT_COLLECTION, [first])
    vectors.flush([TEXT_COLLECTION])


def ask_citing_everything(page: Any, server: RunningServer) -> None:
    """An answer that cites every source it was given, so each chunk has its [n]."""
    reply = sse("The terminals and the cabinet [1] [2] [3] [4] [5] [6].")
    page.goto(server.url + "/ui/ask")
    page.check("#kb-picker input[value='manual']")
    page.fill("#question", "inverter terminals battery cabinet")
    with openai_model(server.eagle, lambda body: reply):
        page.press("#question", "Enter")
        page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .answer .cite")


def cite_spanning(page: Any, pages: int) -> str:
    """The selector of an [n] in the answer whose source covers ``pages`` pages."""
    index = page.evaluate(
        """(n) => [...document.querySelectorAll('#thread .answer .cite')]
             .map(b => b._source)
             .find(s => new Set([...(s.page_nums || []),
                                 ...((s.metadata || {}).boxes || []).map(b => b.page)]).size === n)
             .index""",
        pages,
    )
    return f"#thread .answer .cite[data-index='{index}']"


def test_a_preview_closed_while_loading_adds_nothing_to_the_next(
    page: Any, manual: RunningServer
) -> None:
    ask_citing_everything(page, manual)
    two_pages, one_page = cite_spanning(page, 2), cite_spanning(page, 1)
    held: list[Any] = []
    late = re.compile(r"/pages/1\?width=1000$")  # page 1 answers only when the test says
    page.route(late, lambda route: held.append(route))
    page.click(two_pages)
    while not held:
        page.wait_for_timeout(20)
    page.keyboard.press("Escape")
    page.locator("#preview").wait_for(state="hidden")

    page.click(one_page)
    page.wait_for_selector("#preview[open] .page[data-loaded='true']")
    expected = page.evaluate(f'() => document.querySelector("{one_page}")._source.index')
    with page.expect_response(late):
        held[0].continue_()
    page.wait_for_timeout(500)  # time for the first preview's loop to go on, had it not stopped
    shown = page.locator("#preview .page").evaluate_all("fs => fs.map(f => f.dataset.page)")
    assert len(shown) == 1, shown
    assert page.locator("#preview-meta").inner_text().startswith(f"[{expected}]")
    assert page.errors == []


def test_closing_the_preview_does_not_reopen_the_hovercard(
    page: Any, manual: RunningServer
) -> None:
    ask_citing_everything(page, manual)
    page.locator("#thread .answer .cite").first.focus()
    page.locator("#hovercard").wait_for(state="visible")
    page.keyboard.press("Enter")
    page.wait_for_selector("#preview[open] .page[data-loaded='true']")
    page.keyboard.press("Escape")
    page.locator("#preview").wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert page.locator("#hovercard").is_hidden()
    assert page.evaluate("() => document.activeElement.classList.contains('cite')")


def test_each_step_tells_its_details_on_hover(page: Any, manual: RunningServer) -> None:
    ask_citing_everything(page, manual)
    titles = page.locator("#thread .steps li").evaluate_all(
        "items => items.map(i => [i.textContent, i.getAttribute('title')])"
    )
    assert titles and all(title for _, title in titles), titles
    rerank = next(title for text, title in titles if text.startswith("rerank"))
    assert "reranker:" in rerank


def test_an_ask_error_goes_when_the_next_ask_or_a_new_conversation_starts(
    page: Any, manual: RunningServer
) -> None:
    page.goto(manual.url + "/ui/ask")
    page.wait_for_selector("#kb-picker input[value='manual']")
    notice = page.locator("#notice")

    def ask_with_no_kb() -> None:
        page.uncheck("#kb-picker input[value='manual']")
        page.fill("#question", "Where are the terminals?")
        page.press("#question", "Enter")
        assert notice.inner_text() == "Choose at least one knowledge base."

    ask_with_no_kb()
    page.check("#kb-picker input[value='manual']")
    page.press("#question", "Enter")
    page.wait_for_selector("#thread .msg.assistant:not([aria-busy])")
    assert notice.inner_text() == ""
    ask_with_no_kb()
    page.click("#new-chat")
    assert notice.inner_text() == ""
