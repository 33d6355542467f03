"""Pages for a KB or document that does not exist: a 404 page that says so, over HTTP."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest

from tests.api.server import RunningServer, running_server

HOSTILE = "<img src=x onerror=alert(1)>"
QUOTED = "%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"  # HOSTILE as it travels in a URL path


def main_of(page: str) -> str:
    """The page's <main>: the string catalog the script reads is in every page, main is not."""
    return page.split('<main id="main"', 1)[1].split("</main>", 1)[0]


def test_an_unknown_kb_page_is_a_404_page_without_an_upload_zone(server: RunningServer) -> None:
    with server.client() as client:
        page = client.get("/ui/kb/qa-kb")
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "Knowledge base “qa-kb” was not found" in page.text
    main = main_of(page.text)
    assert '<a href="/">' in main  # the way back to the KB list
    assert 'id="dropzone"' not in main and "hx-get" not in main and "Loading" not in main
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


def test_an_unknown_document_page_is_a_404_page(server: RunningServer) -> None:
    with server.client() as client:
        page = client.get("/ui/documents/deadbeef")
    assert page.status_code == 404
    assert "Document “deadbeef” was not found" in page.text
    assert '<a href="/">' in main_of(page.text) and "Loading" not in main_of(page.text)


def test_the_not_found_page_speaks_the_chosen_language(server: RunningServer) -> None:
    with server.client() as client:
        page = client.get("/ui/kb/qa-kb", headers={"Accept-Language": "zh-CN"})
    assert page.status_code == 404 and "未找到知识库“qa-kb”" in page.text


@pytest.mark.parametrize("path", [f"/ui/kb/{QUOTED}", f"/ui/documents/{QUOTED}"])
def test_a_hostile_name_in_the_url_is_shown_escaped(server: RunningServer, path: str) -> None:
    with server.client() as client:
        page = client.get(path)
    assert page.status_code == 404
    assert html.escape(HOSTILE, quote=False) in page.text
    assert HOSTILE not in page.text and "<img" not in page.text


def test_pages_of_a_kb_and_a_document_that_exist_still_load(server: RunningServer) -> None:
    eagle = server.eagle
    eagle.repositories.knowledge_bases.create("present", engine="eagle")
    document, _ = eagle.repositories.documents.create(
        kb_name="present", filename="a.txt", mime_type="text/plain", sha256="a" * 64, size=1
    )
    with server.client() as client:
        kb = client.get("/ui/kb/present")
        doc = client.get(f"/ui/documents/{document.id}")
    assert kb.status_code == 200 and 'id="dropzone"' in kb.text
    assert doc.status_code == 200 and 'id="doc-detail"' in doc.text


def test_a_question_title_gets_quotes_and_no_second_question_mark(server: RunningServer) -> None:
    sessions = server.eagle.repositories.sessions
    sessions.create(title="How do I prime the pump?")
    sessions.create(title="Pump pressure")
    with server.client() as client:
        listed = client.get("/ui/fragments/sessions").text
    assert 'data-confirm="Delete conversation “How do I prime the pump?”"' in listed
    assert 'data-confirm="Delete conversation “Pump pressure”?"' in listed


KEY = "not-found-key-0123456789"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [{"name": "admin", "key": KEY}]
    with running_server(
        tmp_path_factory.mktemp("gone"), server={"api_keys": keys, "rate_limit_per_minute": 0}
    ) as running:
        yield running


def test_behind_api_keys_a_page_never_tells_whether_a_kb_exists(secured: RunningServer) -> None:
    with secured.client(Authorization=f"Bearer {KEY}") as admin:
        assert admin.post("/knowledge_bases", json={"kb_name": "real"}).status_code == 201
    with secured.client() as anonymous:
        real, ghost = anonymous.get("/ui/kb/real"), anonymous.get(f"/ui/kb/{QUOTED}")
        assert anonymous.get("/ui/documents/deadbeef").status_code == 200
    # The same shell either way; the keyed fragment's 404 shows this message in place.
    assert real.status_code == ghost.status_code == 200
    expected = html.escape(f"Knowledge base “{HOSTILE}” was not found.")
    assert f'data-not-found="{expected}' in ghost.text
    assert HOSTILE not in ghost.text
    with secured.client(Authorization=f"Bearer {KEY}") as admin:
        fragment = admin.get("/ui/fragments/documents", params={"kb_name": "ghost"})
    assert fragment.status_code == 404
