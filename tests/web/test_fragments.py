"""The UI's fragments and form posts over HTTP: self-refreshing lists, the KB name rule, words."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from fpdf import FPDF

from eagle_rag.db.records import KB_NAME
from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.web.i18n import EN, ZH
from eagle_rag.web.routes import DOC_PAGE, POLL_LIMIT, THUMBNAILS
from tests.api.server import RunningServer
from tests.ingest.visual_docs import report_pdf
from tests.web.documents import text_pdf
from tests.web.helpers import kb_with_file, stored_boxes

POLLER = re.compile(r'<div hidden data-poll hx-get="([^"]+)"')
REFRESHER = re.compile(r'<div hidden data-refresh hx-get="([^"]+)" hx-trigger="([\w-]+) from:body"')


def add_document(server: RunningServer, kb: str, name: str) -> str:
    """A document row as an upload leaves it before a worker takes it: pending."""
    record, _ = server.eagle.repositories.documents.create(
        kb_name=kb,
        filename=name,
        mime_type="text/plain",
        sha256=hashlib.sha256(f"{kb}/{name}".encode()).hexdigest(),
        size=1,
    )
    return record.id


def poll_url(html: str) -> str | None:
    found = POLLER.search(html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_lists_refresh_themselves_only_while_something_is_ingesting(
    server: RunningServer,
) -> None:
    server.eagle.repositories.knowledge_bases.create("busy", engine="eagle")
    documents = server.eagle.repositories.documents
    document = add_document(server, "busy", "a.txt")
    with server.client() as client:
        listed = client.get("/ui/fragments/documents", params={"kb_name": "busy"}).text
        assert poll_url(listed) == "/ui/fragments/documents?kb_name=busy&page=1&polls=1"
        kbs = client.get("/ui/fragments/kbs", params={"page": 1, "polls": 4}).text
        assert poll_url(kbs) == "/ui/fragments/kbs?page=1&polls=5"  # same page, one more poll
        last = {"kb_name": "busy", "polls": POLL_LIMIT}
        assert poll_url(client.get("/ui/fragments/documents", params=last).text) is None

        documents.set_fields(document, status="processing")
        assert poll_url(client.get("/ui/fragments/kbs").text)
        documents.set_fields(document, status="completed")
        done = client.get("/ui/fragments/documents", params={"kb_name": "busy"}).text
        assert "completed" in done and poll_url(done) is None
        assert poll_url(client.get("/ui/fragments/kbs").text) is None


def test_a_page_past_the_end_shows_the_last_page_and_refreshes_where_it_is(
    server: RunningServer,
) -> None:
    """After a delete empties the last page the list shows the page before it (not "no
    documents" under a count); uploads and deletes refresh the page the reader is on."""
    server.eagle.repositories.knowledge_bases.create("paged", engine="eagle")
    for n in range(DOC_PAGE + 1):
        add_document(server, "paged", f"doc{n:02d}.txt")
    with server.client() as client:
        gone_past = client.get("/ui/fragments/documents", params={"kb_name": "paged", "page": 3})
        assert gone_past.status_code == 200
        assert EN["no_documents"] not in gone_past.text
        assert gone_past.text.count("<tr data-document") == 1  # the last page: page 2's one row
        assert EN["page_of"].format(page=2, pages=2) in gone_past.text
        assert refresh_url(gone_past.text) == (
            "/ui/fragments/documents?kb_name=paged&page=2",
            "docs-changed",
        )
        kbs = client.get("/ui/fragments/kbs", params={"page": 9}).text
        assert 'data-kb="paged"' in kbs and refresh_url(kbs) == (
            "/ui/fragments/kbs?page=1",
            "kbs-changed",
        )


def refresh_url(html: str) -> tuple[str, str] | None:
    found = REFRESHER.search(html)
    return (found.group(1).replace("&amp;", "&"), found.group(2)) if found else None


def test_the_name_input_checks_the_stores_rule() -> None:
    """The create form's pattern (an HTML pattern: the whole value must match) is the store's."""
    template = Path(__file__).parents[2] / "eagle_rag/web/templates/kbs.html"
    found = re.search(r'id="kb_name"[^>]* pattern="([^"]+)"', template.read_text())
    assert found
    pattern = found.group(1)
    for name in ("a", "kb_1-x", "0abc", "A", "-a", "_a", "a b", "ab.c", "é", "a" * 64, "a" * 65):
        assert bool(re.fullmatch(pattern, name)) == bool(KB_NAME.fullmatch(name)), name


@pytest.mark.parametrize(
    ("name", "language", "message"),
    [
        ("Handbook", "en", EN["kb_name_rule"]),
        ("a" * 65, "zh", ZH["kb_name_rule"]),
        ("", "en", EN["kb_name_needed"]),
    ],
)
def test_a_bad_kb_name_is_refused_in_words_naming_the_field(
    server: RunningServer, name: str, language: str, message: str
) -> None:
    with server.client(Origin=server.url) as client:
        client.cookies.set("eagle_lang", language)
        refused = client.post("/ui/kbs", data={"kb_name": name})
    assert refused.status_code == 400
    body = refused.json()
    assert body["message"] == message and body["details"]["field"] == "kb_name"
    assert "a-z0-9" not in message


def test_a_chunk_with_one_box_says_box(server: RunningServer) -> None:
    document = kb_with_file(server, "boxes", "m.pdf", text_pdf())
    boxes = stored_boxes(server, document, page_count=2)
    with server.client() as client:
        html = client.get(f"/ui/fragments/document/{document}").text
    counts = sorted(len(b) for b in boxes.values())
    assert 1 in counts and 2 in counts, counts  # the first chunk spans both pages
    assert html.count("· 1 box<") == counts.count(1) and "1 boxes" not in html
    assert html.count("· 2 boxes<") == counts.count(2)


def test_a_documents_chunk_count_says_how_many_are_pictures(server: RunningServer) -> None:
    """A report with a chart read "Chunks 3" over a list of two text chunks: the count has its
    visual chunks too, which the list does not show."""
    document = kb_with_file(server, "charts", "report.pdf", report_pdf())
    with server.client() as client:
        html = client.get(f"/ui/fragments/document/{document}").text
        total = client.get(f"/documents/{document}").json()["chunk_count"]
    visuals = server.eagle.vectors.count(VISUAL_COLLECTION, eq("document_id", document))
    listed = html.count("<li data-chunk=")
    assert visuals > 0 and listed == total - visuals
    assert f"({listed} text, {visuals} figures, tables or page tiles)" in html
    assert f'Text chunks <span class="muted small">{listed}</span>' in html


def test_a_conversations_time_says_its_zone(server: RunningServer) -> None:
    """The list showed "2026-12-04 16:02" with no zone: a reader east or west of UTC read it
    as their own time."""
    kb_with_file(server, "talk", "t.md", "# Boilers\n\nBleed the radiator in autumn.")
    with server.client() as client:
        assert client.post("/query", json={"query": "radiator", "kb_name": "talk"}).is_success
        html = client.get("/ui/fragments/sessions").text
    stamp = re.search(r'<time datetime="([^"]+)">(\d{4}-\d\d-\d\d \d\d:\d\d) UTC</time>', html)
    assert stamp and stamp.group(1).endswith("+00:00")


def long_pdf(pages: int) -> bytes:
    pdf = FPDF(format="A5", unit="mm")
    for n in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("Helvetica", "", 12)
        pdf.set_xy(20, 40)
        pdf.multi_cell(100, 8, f"Page {n} of the long manual tells the wiring of panel {n}.")
    return bytes(pdf.output())


def test_a_document_longer_than_its_thumbnails_says_how_many_pages_it_has(
    server: RunningServer,
) -> None:
    document = kb_with_file(server, "long", "long.pdf", long_pdf(THUMBNAILS + 2))
    with server.client() as client:
        html = client.get(f"/ui/fragments/document/{document}").text
        zh = client.get(
            f"/ui/fragments/document/{document}", headers={"Cookie": "eagle_lang=zh"}
        ).text
    assert html.count("<figure>") == THUMBNAILS
    assert EN["pages_shown"].format(shown=THUMBNAILS, pages=THUMBNAILS + 2) in html
    assert ZH["pages_shown"].format(shown=THUMBNAILS, pages=THUMBNAILS + 2) in zh
