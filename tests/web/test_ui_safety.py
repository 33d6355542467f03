"""Hostile input stays text; API keys are asked for, kept in the tab, and scope what is shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from eagle_rag.web.i18n import EN
from tests.api.server import RunningServer, running_server
from tests.web.helpers import choose_files, create_kb, wait_status

pytestmark = pytest.mark.browser

NAME = "<img src=x onerror=window.__xss=1;alert(1)><svg onload=alert(2)>.md"
BODY = b"""# <script>window.__xss='heading'</script>Hostile

The gasket torque is <img src=y onerror="window.__xss='text';alert(2)"> twelve newton metres.

<script>window.__xss='body';alert(3)</script> The valve opens at
<b onmouseover="window.__xss='b'">four</b> bar.
"""


def test_hostile_names_and_text_are_shown_as_text_and_never_run(
    page: Any, server: RunningServer
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    create_kb(page, server.url, "hostile")
    page.goto(server.url + "/ui/kb/hostile")
    page.wait_for_selector("#dropzone")
    choose_files(page, [(NAME, "text/markdown", BODY)])
    wait_status(page, NAME, "completed")
    page.wait_for_selector("#doc-list tr[data-document] a")
    link = page.locator("#doc-list tr[data-document] a").first
    assert link.inner_text() == NAME  # the name, as text
    link.click()
    page.wait_for_selector("#doc-title")
    assert page.locator("#doc-title").inner_text() == NAME
    chunks = page.locator(".chunks").inner_text()
    assert "gasket torque" in chunks

    page.goto(server.url + "/ui/ask")
    page.wait_for_selector("#kb-picker input[value='hostile']")
    page.check("#kb-picker input[value='hostile']")
    page.fill("#question", "What is the gasket torque and when does the valve open?")
    page.press("#question", "Enter")
    page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .answer")
    cite = page.locator("#thread .answer .cite").first
    cite.hover()
    page.locator("#hovercard").wait_for(state="visible")
    assert NAME in page.locator("#hovercard").inner_text()
    assert "gasket torque" in page.locator("#hovercard").inner_text()
    page.keyboard.press("Escape")
    page.locator("#hovercard").wait_for(state="hidden")
    page.click("#thread details.sources summary")
    page.locator("#session-list button.session").first.wait_for()

    for where in ("#thread", "#doc-list", "#session-list", "#hovercard"):
        if page.locator(where).count():
            injected = page.locator(f"{where} script, {where} img[onerror], {where} svg, {where} b")
            assert injected.count() == 0
    assert page.evaluate("() => window.__xss") is None
    assert dialogs == []
    assert page.network_log.foreign(server.url) == []
    # The <img src=x> / src=y in the text would have fetched /x or /y had it become markup.
    assert not [u for u in page.network_log.urls if u.rstrip("/").endswith(("/x", "/y"))]


def test_form_posts_from_another_origin_are_refused(server: RunningServer) -> None:
    with server.client() as client:
        refused = client.post(
            "/ui/kbs", data={"kb_name": "csrf"}, headers={"Origin": "https://evil.example"}
        )
        assert refused.status_code == 403
        assert "cross-site" in refused.json()["message"]
        bare = client.post("/ui/kbs", data={"kb_name": "csrf"})
        assert bare.status_code == 403
        assert client.get("/knowledge_bases/csrf").status_code == 404  # nothing was created
        assert client.post("/knowledge_bases", json={"kb_name": "keep"}).status_code == 201
        for path in ("/ui/kbs/keep/delete", "/ui/kbs/keep/rebuild"):
            assert client.get(path).status_code in (404, 405)  # GET never changes state
        assert client.get("/knowledge_bases/keep").status_code == 200
        forged = client.post("/ui/kbs/keep/delete", headers={"Referer": "http://evil.example/x"})
        assert forged.status_code == 403
        assert client.get("/knowledge_bases/keep").status_code == 200


ADMIN, LIMITED = "admin-key-0123456789", "limited-key-0123456789"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [
        {"name": "admin", "key": ADMIN},
        {"name": "viewer", "key": LIMITED, "kb_names": ["open"]},
    ]
    with running_server(
        tmp_path_factory.mktemp("keys"), server={"api_keys": keys, "rate_limit_per_minute": 0}
    ) as running:
        with running.client(Authorization=f"Bearer {ADMIN}") as admin:
            for kb in ("open", "secret"):
                assert admin.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
        yield running


def test_with_api_keys_the_ui_asks_for_one_and_shows_only_its_kbs(
    browser: Any, secured: RunningServer
) -> None:
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        page.goto(secured.url + "/")
        dialog = page.locator("#key-dialog")
        dialog.wait_for(state="visible")
        page.fill("#key-input", LIMITED)
        page.press("#key-input", "Enter")
        page.wait_for_selector("#kb-list tr[data-kb]")
        shown = page.locator("#kb-list tr[data-kb]").evaluate_all("rs => rs.map(r => r.dataset.kb)")
        assert shown == ["open"]
        assert page.evaluate("() => sessionStorage.getItem('eagle_api_key')") == LIMITED
        assert page.evaluate("() => localStorage.length") == 0
        assert all(LIMITED not in c["value"] for c in context.cookies())
        page.goto(secured.url + "/ui/ask")
        page.wait_for_selector("#kb-picker input")
        names = page.locator("#kb-picker input").evaluate_all("is => is.map(i => i.value)")
        assert names == ["open"]
        page.goto(secured.url + "/ui/kb/open")  # uploads and their streams carry the key too
        choose_files(page, [("keyed.md", "text/markdown", b"# Keyed\n\nSent with a key.")])
        wait_status(page, "keyed.md", "completed")
        page.wait_for_selector("#doc-list tr[data-document]")
        other = context.new_page()  # a new tab starts without the key
        other.goto(secured.url + "/")
        other.locator("#key-dialog").wait_for(state="visible")
    finally:
        context.close()


def test_a_missing_refused_or_narrow_key_is_said_in_place(
    browser: Any, secured: RunningServer
) -> None:
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        page.goto(secured.url + "/")
        dialog = page.locator("#key-dialog")
        dialog.wait_for(state="visible")
        assert page.locator("#key-refused").is_hidden()
        failed = page.locator("#kb-list[data-failed='401']")
        failed.wait_for()
        page.locator("#engine-form[data-failed='401']").wait_for()
        page.keyboard.press("Escape")  # dismissed: the list says why it is empty
        dialog.wait_for(state="hidden")
        assert failed.locator(".error").inner_text() == EN["key_missing"]
        assert "Loading" not in page.locator("main").inner_text()
        # A fragment refused after that says so in place; the dialog stays closed (it opened
        # again for each fragment that answered after the reader closed it).
        page.evaluate(
            "() => { const list = document.getElementById('kb-list');"
            " delete list.dataset.failed; htmx.ajax('GET', '/ui/fragments/kbs', list); }"
        )
        failed.wait_for()  # set by the same handler, after it asked (or not) for a key
        assert dialog.is_hidden()

        failed.locator("button").click()  # a way back to the dialog
        dialog.wait_for(state="visible")
        page.fill("#key-input", "wrong-key-0123456789")
        page.press("#key-input", "Enter")
        page.locator("#key-refused").wait_for(state="visible")  # after the reload
        assert page.locator("#key-refused").inner_text() == EN["key_refused"]
        page.locator("#engine-form[data-failed='401']").wait_for()
        failed.wait_for()
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        assert failed.locator(".error").inner_text() == EN["key_refused"]

        failed.locator("button").click()
        page.fill("#key-input", LIMITED)
        page.press("#key-input", "Enter")
        page.wait_for_selector("#kb-list tr[data-kb='open']")
        page.goto(secured.url + "/ui/kb/secret")  # outside this key's reach: a 403
        page.locator("#doc-list[data-failed='403']").wait_for()
        assert page.locator("#upload-card, #dropzone").count() == 0
    finally:
        context.close()
