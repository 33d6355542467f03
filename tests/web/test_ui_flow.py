"""The main path through the real UI in Chromium: create, upload, ask, cite, preview, reopen."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.api.server import RunningServer
from tests.web.documents import MARKDOWN, PAGES, text_pdf
from tests.web.helpers import (
    choose_files,
    create_kb,
    document_id,
    drop_files,
    stored_boxes,
    upload_row,
    wait_status,
)

pytestmark = pytest.mark.browser
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "ui"


def shot(page: Any, name: str) -> None:
    """Rewrite docs/ui/NAME.png when EAGLE_UI_SCREENSHOTS=1 (so plain runs leave git clean)."""
    if os.environ.get("EAGLE_UI_SCREENSHOTS") != "1":
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def citations(page: Any) -> list[dict[str, Any]]:
    """What each [n] button of the last answer points to, read from the page."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#thread .msg.assistant:last-of-type .answer .cite')]
             .map(b => ({index: b._source.index, chunk_id: b._source.chunk_id,
                         filename: b._source.filename, path: b._source.path,
                         page_nums: b._source.page_nums || [],
                         boxes: (b._source.boxes || (b._source.metadata || {}).boxes || [])}))"""
    )


def test_create_upload_ask_preview_and_reopen(page: Any, server: RunningServer) -> None:
    url = server.url
    create_kb(page, url, "handbook")
    row = page.locator("#kb-list tr[data-kb='handbook']")
    assert row.locator("[data-count=documents]").inner_text() == "0"
    shot(page, "knowledge-bases")

    page.click("#kb-list a[href='/ui/kb/handbook']")
    page.wait_for_selector("#dropzone")
    pdf = text_pdf()
    choose_files(page, [("manual.pdf", "application/pdf", pdf)])
    drop_files(page, [("guide.md", "text/markdown", MARKDOWN)])
    for name in ("manual.pdf", "guide.md"):
        wait_status(page, name, "completed")
        row_of = upload_row(page, name)
        assert row_of.get_attribute("data-phases")  # the phases the stream reported
        assert row_of.locator(".badge").inner_text() == "completed"
        assert row_of.locator("progress").evaluate("p => p.value === p.max")
    # The list refreshes after each completion: wait for the refresh after the last one.
    page.wait_for_function(
        "() => document.querySelectorAll('#doc-list tr[data-document]').length === 2"
    )
    shot(page, "documents")

    pdf_id = document_id(server, "handbook", "manual.pdf")
    boxes = stored_boxes(server, pdf_id, page_count=len(PAGES))

    page.goto(f"{url}/ui/documents/{pdf_id}")
    page.wait_for_selector("#doc-title")
    assert page.locator("#doc-title").inner_text() == "manual.pdf"
    assert page.locator(".tree li").count() >= 1
    assert "copper terminals" in page.locator(".chunks").inner_text()
    with page.expect_download() as download:
        page.click("[data-download]")
    assert download.value.suggested_filename == "manual.pdf"
    assert Path(download.value.path()).read_bytes() == pdf
    page.wait_for_function("() => [...document.querySelectorAll('.thumbs img')].every(i => i.src)")
    shot(page, "document")

    page.goto(url + "/")
    page.wait_for_selector("#kb-list tr[data-kb='handbook'] [data-count=documents]")
    counts = page.locator("#kb-list tr[data-kb='handbook']")
    assert counts.locator("[data-count=documents]").inner_text() == "2"
    assert int(counts.locator("[data-count=chunks]").inner_text()) > 2

    page.goto(url + "/ui/ask")
    page.wait_for_selector("#kb-picker input[value='handbook']")
    page.check("#kb-picker input[value='handbook']")
    page.fill("#question", "What are the inverter copper terminals rated for?")
    page.press("#question", "Enter")
    page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .answer .cite", timeout=60_000)
    steps = page.locator("#thread .steps li").all_inner_texts()
    assert any(s.startswith("route") for s in steps) and any(s.startswith("recall") for s in steps)
    assert all(" ms" in s for s in steps if s.startswith(("route", "recall")))
    cited = citations(page)
    assert cited and all(c["filename"] in ("manual.pdf", "guide.md") for c in cited)
    pdf_cite = next(c for c in cited if c["filename"] == "manual.pdf")
    assert pdf_cite["boxes"] == boxes[pdf_cite["chunk_id"]]

    button = page.locator(f"#thread .answer .cite[data-index='{pdf_cite['index']}']").first
    button.hover()
    card = page.locator("#hovercard")
    card.wait_for(state="visible")
    assert "manual.pdf" in card.inner_text()
    assert "copper" in card.inner_text() or "terminal" in card.inner_text()
    shot(page, "ask")

    button.click()
    page.wait_for_selector("#preview[open] .page[data-loaded='true']")
    expected_pages = sorted({b["page"] for b in pdf_cite["boxes"]} | set(pdf_cite["page_nums"]))
    page.wait_for_function(
        "(n) => document.querySelectorAll('#preview .page[data-loaded=\"true\"]').length === n",
        arg=len(expected_pages),
    )
    frames = page.locator("#preview .page")
    assert [int(x) for x in frames.evaluate_all("fs => fs.map(f => f.dataset.page)")] == (
        expected_pages
    )
    for frame_index, number in enumerate(expected_pages):
        frame = frames.nth(frame_index)
        image = frame.locator("img").bounding_box()
        for mark, box in zip(
            frame.locator(".box").all(),
            [b for b in pdf_cite["boxes"] if b["page"] == number],
            strict=True,
        ):
            rect = mark.bounding_box()
            x0, y0, x1, y1 = box["bbox"]
            assert abs(rect["x"] - (image["x"] + x0 * image["width"])) <= 2
            assert abs(rect["y"] - (image["y"] + y0 * image["height"])) <= 2
            assert abs(rect["width"] - (x1 - x0) * image["width"]) <= 3
            assert abs(rect["height"] - (y1 - y0) * image["height"]) <= 3
        natural = frame.locator("img").evaluate("i => i.naturalWidth / i.naturalHeight")
        assert abs(natural - 210 / 297) < 0.01  # the real A4 page, rendered
    shot(page, "preview")
    page.keyboard.press("Escape")

    page.click("#new-chat")
    assert page.locator("#thread .msg").count() == 0
    page.wait_for_selector("#session-list button.session")
    page.locator("#session-list button.session").first.click()
    page.wait_for_selector("#thread .msg.assistant .answer .cite")
    assert citations(page) == cited
    page.locator(f"#thread .answer .cite[data-index='{pdf_cite['index']}']").first.click()
    page.wait_for_selector("#preview[open] .page[data-loaded='true'] .box")

    foreign = page.network_log.foreign(url)
    assert foreign == [], foreign
    assert page.errors == []


def test_a_failed_upload_shows_its_reason_and_can_be_retried(
    page: Any, server: RunningServer
) -> None:
    create_kb(page, server.url, "broken")
    page.goto(server.url + "/ui/kb/broken")
    page.wait_for_selector("#dropzone")
    choose_files(page, [("broken.pdf", "application/pdf", b"%PDF-1.7\nnot really a pdf\n")])
    wait_status(page, "broken.pdf", "failed")
    row = upload_row(page, "broken.pdf")
    reason = row.locator(".reason")
    assert reason.is_visible() and len(reason.inner_text().strip()) > 5
    with server.client() as client:
        task = client.get("/tasks", params={"kb_name": "broken"}).json()[0]
    assert task["error"] and task["error"][:40] in reason.inner_text()
    row.locator("button.retry").click()
    page.wait_for_function(
        "() => document.querySelector(\"#uploads li[data-upload='broken.pdf']\").dataset.status"
        " === 'failed' && document.querySelector(\"#uploads li[data-upload='broken.pdf'] .reason\")"
        ".hidden === false"
    )
    with server.client() as client:
        assert client.get(f"/tasks/{task['job_id']}").json()["attempts"] >= 2

    page.fill("#url-input", "http://127.0.0.1:9/private.md")  # a private address: refused
    page.click("#url-form button[type=submit]")
    wait_status(page, "http://127.0.0.1:9/private.md", "failed")
    refused = upload_row(page, "http://127.0.0.1:9/private.md").locator(".reason")
    assert refused.is_visible() and refused.inner_text().strip()


def test_a_drop_of_many_files_runs_a_few_at_a_time_and_all_complete(
    page: Any, server: RunningServer
) -> None:
    create_kb(page, server.url, "bulk")
    page.goto(server.url + "/ui/kb/bulk")
    page.wait_for_selector("#dropzone")
    files = [
        (
            f"note-{n:02}.md",
            "text/markdown",
            f"# Note {n}\n\nPart {n} ships in crate {n * 7}.".encode(),
        )
        for n in range(12)
    ]
    drop_files(page, files)
    assert page.locator("#uploads li").count() == 12  # every file has its row at once
    for name, _, _ in files:
        wait_status(page, name, "completed")
    page.wait_for_function(
        "() => document.querySelectorAll('#doc-list tr[data-document]').length === 12"
    )
