"""The create form for an engine whose schema uses every item type, and rebuild / delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from eagle_rag.engines.base import EngineDocument, EngineIngestResult, EngineQuery, RetrievedHit
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.errors import PluginError
from eagle_rag.web.i18n import EN, ZH
from tests.api.server import RunningServer
from tests.web.documents import MARKDOWN
from tests.web.helpers import kb_with_file

pytestmark = pytest.mark.browser


class EveryFieldEngine:
    """A knowledge engine that only declares a schema with every item type (for the form)."""

    name = "everyfield"
    description = "An engine whose creation schema uses every item type."
    capabilities = ()
    retrieval_schema = ()
    creation_schema = (
        SchemaItem("base_url", "string", {"en_US": "Service URL"}, required=True),
        SchemaItem("api_key", "secret", {"en_US": "API key"}, required=True),
        SchemaItem("top", "integer", {"en_US": "Top"}, default=8, minimum=1, maximum=50),
        SchemaItem("weight", "float", {"en_US": "Weight"}, default=0.5),
        SchemaItem("ocr", "boolean", {"en_US": "OCR"}, default=True),
        SchemaItem("mode", "select", {"en_US": "Mode"}, options=("fast", "deep"), default="fast"),
        SchemaItem("depth", "integer", {"en_US": "Depth"}, default=2, show_if={"mode": "deep"}),
        SchemaItem("prompt", "text", {"en_US": "Prompt"}),
        SchemaItem("headers", "json", {"en_US": "Headers"}, default={"x": "1"}),
    )

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """Nothing to check remotely."""

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        """Nothing to remove remotely."""

    async def ingest(self, document: EngineDocument) -> EngineIngestResult:
        raise PluginError("everyfield ingests nothing")

    async def delete_document(
        self, kb_name: str, remote_id: str, settings: Mapping[str, Any]
    ) -> bool:
        return False

    async def retrieve(self, query: EngineQuery) -> list[RetrievedHit]:
        return []


@pytest.fixture(scope="module")
def with_engine(server: RunningServer) -> RunningServer:
    server.eagle.registries.knowledge_engines.register(
        "everyfield", EveryFieldEngine(), owner="tests"
    )
    return server


def test_the_form_follows_the_schema_of_the_chosen_engine(
    page: Any, with_engine: RunningServer
) -> None:
    page.goto(with_engine.url + "/")
    page.wait_for_selector("[name=creation__chunk_size]")
    page.select_option("#engine", "everyfield")
    page.wait_for_selector("[name=creation__base_url]")
    assert page.locator("[name=creation__chunk_size]").count() == 0
    assert page.get_attribute("[name=creation__base_url]", "required") is not None
    assert page.get_attribute("[name=creation__api_key]", "type") == "password"
    assert page.input_value("[name=creation__top]") == "8"
    assert page.get_attribute("[name=creation__top]", "max") == "50"
    assert page.is_checked("[name=creation__ocr]")
    assert page.input_value("[name=creation__mode]") == "fast"
    assert page.locator("[data-field=depth]").is_hidden()  # show_if: mode == deep
    page.select_option("[name=creation__mode]", "deep")
    page.locator("[data-field=depth]").wait_for(state="visible")
    assert page.locator("textarea[name=creation__prompt]").count() == 1
    assert page.input_value("[name=creation__headers]") == '{"x": "1"}'

    page.fill("#kb_name", "bridged")
    page.fill("[name=creation__base_url]", "https://kb.example")
    page.click("#create-kb button[type=submit]")  # no API key yet: the server names the field
    page.wait_for_selector("#create-kb [aria-invalid=true][name=creation__api_key]")
    assert "api_key is required" in page.locator("#notice").inner_text()

    page.fill("[name=creation__api_key]", "s3cret")
    page.fill("[name=creation__depth]", "5")
    page.uncheck("[name=creation__ocr]")
    page.fill("[name=creation__headers]", '{"x": "2"}')
    page.click("#create-kb button[type=submit]")
    page.wait_for_selector("#kb-list tr[data-kb='bridged']")
    with with_engine.client() as client:
        kb = client.get("/knowledge_bases/bridged").json()
    assert kb["engine"] == "everyfield"
    assert kb["creation_settings"] == {
        "base_url": "https://kb.example",
        "api_key": "********",
        "top": 8,
        "weight": 0.5,
        "ocr": False,
        "mode": "deep",
        "depth": 5,
        "headers": {"x": "2"},
    }


def test_rebuild_and_delete_ask_first(page: Any, server: RunningServer) -> None:
    kb_with_file(server, "scratch", "g.md", MARKDOWN)
    page.goto(server.url + "/")
    row = page.locator("#kb-list tr[data-kb='scratch']")
    row.wait_for()
    messages: list[str] = []

    def answer(accept: bool) -> None:
        def handle(dialog: Any) -> None:
            messages.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        page.once("dialog", handle)

    answer(True)
    row.locator("button", has_text="Rebuild").click()
    page.wait_for_selector("#notice .ok")
    assert "Rebuilding 1" in page.locator("#notice").inner_text()
    answer(False)
    row.locator("button.danger").click()
    page.wait_for_timeout(300)
    with server.client() as client:
        assert client.get("/knowledge_bases/scratch").status_code == 200  # dismissed: kept
    answer(True)
    row.locator("button.danger").click()
    page.locator("#kb-list tr[data-kb='scratch']").wait_for(state="detached")
    with server.client() as client:
        assert client.get("/knowledge_bases/scratch").status_code == 404
    assert all("scratch" in m for m in messages) and len(messages) == 3


def test_documents_and_conversations_are_deleted_after_a_confirmation(
    page: Any, server: RunningServer
) -> None:
    document = kb_with_file(server, "trash", "old.md", MARKDOWN)
    confirmations: list[str] = []
    page.on("dialog", lambda d: (confirmations.append(d.message), d.accept()))

    page.goto(server.url + "/ui/ask")
    page.check("#kb-picker input[value='trash']")
    page.fill("#question", "How are solar panels cleaned?")
    page.press("#question", "Enter")
    page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .cite")
    page.wait_for_selector("#session-list [data-delete]")
    session_id = page.evaluate(
        "() => document.querySelector('#session-list button.session').dataset.session"
    )
    page.click("#session-list [data-delete]")
    page.wait_for_selector("#session-list [data-delete]", state="detached")
    assert page.locator("#thread .msg").count() == 0  # the open conversation went with it
    with server.client() as client:
        assert client.get(f"/sessions/{session_id}/messages").status_code == 404

    page.goto(server.url + "/ui/kb/trash")
    page.wait_for_selector("#doc-list tr[data-document] [data-delete]")
    page.click("#doc-list tr[data-document] [data-delete]")
    page.wait_for_selector("#doc-list tr[data-document]", state="detached")
    with server.client() as client:
        assert client.get(f"/documents/{document}").status_code == 404
    assert any("old.md" in m for m in confirmations) and len(confirmations) == 2
    assert confirmations[0] == "Delete conversation “How are solar panels cleaned?”"


def test_a_double_click_on_create_creates_once_and_says_no_error(
    page: Any, server: RunningServer
) -> None:
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(server.url + "/")
    page.wait_for_selector("#engine-form [name=creation__chunk_size]")
    page.fill("#kb_name", "twice")
    page.dblclick("#create-kb button[type=submit]")
    page.wait_for_selector("#kb-list tr[data-kb='twice']")
    page.wait_for_timeout(500)  # a second submission, had one been queued, is sent by now
    assert posts == [server.url + "/ui/kbs"]
    assert page.locator("#notice").inner_text() == "twice — created"
    assert page.get_attribute("#kb_name", "aria-invalid") is None  # no second, empty, submit


@pytest.mark.parametrize(
    ("locale", "name", "said"),
    [
        ("en-US", "Handbook", EN["kb_name_rule"]),
        ("zh-CN", "-notes", ZH["kb_name_rule"]),
        ("en-US", "", EN["kb_name_needed"]),
    ],
)
def test_a_name_the_store_refuses_is_told_in_words_before_sending(
    browser: Any, server: RunningServer, locale: str, name: str, said: str
) -> None:
    context = browser.new_context(locale=locale)
    try:
        page = context.new_page()
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.goto(server.url + "/")
        page.wait_for_selector("#engine-form [name=creation__chunk_size]")
        page.fill("#kb_name", name)
        page.click("#create-kb button[type=submit]")
        error = page.locator("#create-kb #kb_name ~ .field-error")
        error.wait_for()
        assert error.inner_text() == said
        assert page.get_attribute("#kb_name", "aria-invalid") == "true"
        assert posts == []
        page.fill("#kb_name", "fine-name")
        page.click("#create-kb button[type=submit]")
        page.wait_for_selector("#kb-list tr[data-kb='fine-name']")
        assert error.is_hidden()
        with server.client() as client:
            assert client.delete("/knowledge_bases/fine-name").status_code in (200, 204)
    finally:
        context.close()


def test_a_double_click_on_a_documents_delete_asks_and_deletes_once(
    page: Any, server: RunningServer
) -> None:
    document = kb_with_file(server, "once", "one.md", MARKDOWN)
    confirmations: list[str] = []
    deletes: list[str] = []
    page.on("dialog", lambda d: (confirmations.append(d.message), d.accept()))
    page.on("request", lambda r: deletes.append(r.url) if r.method == "DELETE" else None)
    page.goto(server.url + "/ui/kb/once")
    page.wait_for_selector("#doc-list tr[data-document] [data-delete]")
    page.dblclick("#doc-list tr[data-document] [data-delete]")
    page.wait_for_selector("#doc-list tr[data-document]", state="detached")
    page.wait_for_timeout(300)
    assert len(confirmations) == 1 and deletes == [f"{server.url}/documents/{document}"]
    assert page.locator("#notice").inner_text() == ""  # no 404 from a second DELETE


@pytest.mark.parametrize("action", ["rebuild", "delete"])
def test_a_double_click_on_rebuild_or_delete_asks_and_sends_once(
    page: Any, server: RunningServer, action: str
) -> None:
    kb_with_file(server, f"dbl-{action}", "d.md", MARKDOWN)
    confirmations: list[str] = []
    posts: list[str] = []
    page.on("dialog", lambda d: (confirmations.append(d.message), d.accept()))
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(server.url + "/")
    button = f"#kb-list tr[data-kb='dbl-{action}'] button[hx-post$='/{action}']"
    page.wait_for_selector(button)
    # The second click comes as soon as the first is confirmed, while its post is on its way.
    page.evaluate(
        "(b) => { const button = document.querySelector(b); button.click(); button.click(); }",
        button,
    )
    page.wait_for_selector("#notice .ok")
    page.wait_for_timeout(500)  # a second post, had one been sent, is answered by now
    assert len(confirmations) == 1
    assert posts == [f"{server.url}/ui/kbs/dbl-{action}/{action}"]
    assert page.locator("#notice .err").count() == 0


def test_the_kb_screen_logs_no_error_and_a_bad_name_clears_the_last_notice(
    page: Any, server: RunningServer
) -> None:
    logged: list[str] = []
    page.on("console", lambda m: logged.append(m.text) if m.type == "error" else None)
    page.goto(server.url + "/")
    page.wait_for_selector("#engine-form [name=creation__chunk_size]")
    page.fill("#kb_name", "told-twice")
    page.click("#create-kb button[type=submit]")
    page.wait_for_selector("#kb-list tr[data-kb='told-twice']")
    assert logged == []  # the engine picker's GET inherits nothing meant for the post
    page.fill("#kb_name", "told-twice")
    page.click("#create-kb button[type=submit]")
    page.wait_for_selector("#notice .err")  # already exists
    page.fill("#kb_name", "Told Twice")
    page.click("#create-kb button[type=submit]")
    page.locator("#create-kb #kb_name ~ .field-error").wait_for()
    assert page.locator("#notice").inner_text() == ""  # only the field's own error is said
