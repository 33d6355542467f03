"""Lists that refresh themselves while something they show is still being ingested."""

from __future__ import annotations

from typing import Any

import pytest

from eagle_rag.web.routes import DOC_PAGE
from tests.api.server import RunningServer
from tests.web.test_fragments import add_document

pytestmark = pytest.mark.browser


def test_a_reloaded_kb_page_shows_an_ingest_finish_without_a_reload(
    page: Any, server: RunningServer
) -> None:
    server.eagle.repositories.knowledge_bases.create("live", engine="eagle")
    document = add_document(server, "live", "slow.txt")
    server.eagle.repositories.documents.set_fields(document, status="processing")
    page.goto(server.url + "/ui/kb/live")
    row = page.locator(f"#doc-list tr[data-document='{document}']")
    row.locator(".badge.processing").wait_for()
    assert page.locator("#uploads li").count() == 0  # no upload row follows it after a reload

    server.eagle.repositories.documents.set_fields(document, status="completed")
    row.locator(".badge.completed").wait_for(timeout=10_000)
    page.wait_for_timeout(200)
    assert page.locator("#doc-list [data-poll]").count() == 0  # nothing left to wait for
    assert page.errors == []


def test_the_kb_list_counts_follow_a_rebuild_until_it_is_done(
    page: Any, server: RunningServer
) -> None:
    server.eagle.repositories.knowledge_bases.create("rebuilt", engine="eagle")
    document = add_document(server, "rebuilt", "again.txt")
    page.goto(server.url + "/")
    statuses = page.locator("#kb-list tr[data-kb='rebuilt'] .badge")
    statuses.filter(has_text="pending 1").wait_for()

    server.eagle.repositories.documents.set_fields(document, status="completed")
    statuses.filter(has_text="completed 1").wait_for(timeout=10_000)
    assert statuses.all_inner_texts() == ["completed 1"]
    assert page.locator("#kb-list [data-poll]").count() == 0
    assert page.errors == []


def test_a_delete_on_a_later_page_keeps_the_reader_on_that_page(
    page: Any, server: RunningServer
) -> None:
    server.eagle.repositories.knowledge_bases.create("long", engine="eagle")
    documents = server.eagle.repositories.documents
    for n in range(DOC_PAGE + 2):
        documents.set_fields(add_document(server, "long", f"doc{n:02d}.txt"), status="completed")
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(server.url + "/ui/kb/long")
    pager = page.locator("#doc-list .pager span")
    pager.filter(has_text="Page 1 of 2").wait_for()
    page.click("#doc-list .pager button")
    pager.filter(has_text="Page 2 of 2").wait_for()
    rows = page.locator("#doc-list tr[data-document]")
    assert rows.all_inner_texts()[0].startswith("doc50.txt")

    rows.first.locator("[data-delete]").click()
    page.locator("#doc-list tr[data-document]", has_text="doc50.txt").wait_for(state="detached")
    assert rows.count() == 1 and rows.first.inner_text().startswith("doc51.txt")  # still page 2
    rows.first.locator("[data-delete]").click()  # the last row of the last page
    page.locator("#doc-list tr[data-document]", has_text="doc51.txt").wait_for(state="detached")
    assert rows.count() == DOC_PAGE  # the page before it, not "No documents"
    assert page.errors == []
