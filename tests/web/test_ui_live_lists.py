"""Lists that refresh themselves while something they show is still being ingested."""

from __future__ import annotations

from typing import Any

import pytest

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
