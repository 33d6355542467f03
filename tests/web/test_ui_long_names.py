"""The longest KB name (64 characters) and a long file name wrap: nothing leaves the screen."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.server import RunningServer, wait_for_task
from tests.web.documents import MARKDOWN

pytestmark = pytest.mark.browser

LONG_KB = "longname" * 8  # the maximum, without a hyphen to break at
LONG_FILE = "quarterlymaintenancereport" * 3 + ".md"


@pytest.fixture(scope="module")
def long_named(server: RunningServer) -> RunningServer:
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": LONG_KB}).status_code == 201
        job = client.post(
            "/ingest", data={"kb_name": LONG_KB}, files={"file": (LONG_FILE, MARKDOWN)}
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "completed"
    return server


def inside(page: Any, selector: str, right_edge: float) -> bool:
    box = page.locator(selector).bounding_box()
    return bool(box and box["x"] >= 0 and box["x"] + box["width"] <= right_edge + 0.5)


def test_at_360_px_the_ask_and_kb_pages_wrap_long_names(
    browser: Any, long_named: RunningServer
) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, locale="en-US")
    try:
        page = context.new_page()
        page.goto(long_named.url + "/ui/ask")
        page.wait_for_selector(f"#kb-picker input[value='{LONG_KB}']")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 360

        page.goto(f"{long_named.url}/ui/kb/{LONG_KB}")
        page.wait_for_selector("#doc-list tr[data-document]")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 360
        assert page.evaluate(
            "() => [...document.querySelectorAll('#doc-list .scroll')]"
            ".every(s => s.scrollWidth <= s.clientWidth)"
        )
        assert inside(page, "#doc-list tr[data-document] button.danger", 360)
        link = page.locator("#doc-list tr[data-document] a").bounding_box()
        assert link and link["width"] > 200  # whole words a line, not two letters

        page.goto(long_named.url + "/")
        page.wait_for_selector(f"#kb-list tr[data-kb='{LONG_KB}']")
        assert inside(page, f"#kb-list tr[data-kb='{LONG_KB}'] button.danger", 360)
    finally:
        context.close()


def test_at_1280_px_a_long_kb_name_keeps_delete_inside_its_card(
    page: Any, long_named: RunningServer
) -> None:
    page.goto(long_named.url + "/")
    page.wait_for_selector(f"#kb-list tr[data-kb='{LONG_KB}']")
    card = page.locator("#kb-list").bounding_box()
    assert card
    assert inside(
        page, f"#kb-list tr[data-kb='{LONG_KB}'] button.danger", card["x"] + card["width"]
    )
    assert page.evaluate("() => document.querySelector('#kb-list .scroll').scrollWidth") <= (
        page.evaluate("() => document.querySelector('#kb-list .scroll').clientWidth")
    )
