"""The web UI under load: Ask page first paint with 1,000 documents, KB screens with 10,000.

One run on the embedded default (temporary data dir): the real ASGI app under uvicorn on
127.0.0.1, Debian's Chromium through Playwright (headless). Document metadata is seeded straight
into the metadata database (no parsing: the pages read metadata only).

1. 1,000 documents in one KB: open ``/ui/ask`` in a fresh browser context ``--runs`` times;
   first contentful paint and the time until the KB picker is filled (the first meaningful
   paint: the page can be used), medians. Target: < 1 s. Baseline in the same run: the same
   page before any document exists; the ratio shows what the documents cost.
2. 10,000 documents in one KB: the KB list fragment, the first and the last page of the
   document list (50 rows a page), their response sizes, and the documents screen in the
   browser until its first rows show. The list is paged, so none of this grows with the KB.

    .venv/bin/python -m benchmarks.ui_pages [--runs 5]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import socket
import statistics
import tempfile
import threading
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from eagle_rag.api.app import create_app
from eagle_rag.db.repositories.base import new_id
from eagle_rag.db.tables import DocumentRow
from eagle_rag.settings import load_settings

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed(eagle: Any, kb_name: str, count: int) -> float:
    """``count`` completed documents in a new KB, inserted in batches; seconds taken."""
    started = time.perf_counter()
    eagle.repositories.knowledge_bases.create(kb_name)
    for start in range(0, count, 1000):
        with eagle.database.session() as session:
            session.add_all(
                DocumentRow(
                    id=new_id(),
                    plugin_namespace=eagle.namespace,
                    kb_name=kb_name,
                    filename=f"report-{n:05}.pdf",
                    mime_type="application/pdf",
                    sha256=f"{kb_name}-{n}".encode().hex().ljust(64, "0")[:64],
                    size=10_000 + n,
                    pages=1 + n % 40,
                    status="completed" if n % 50 else "failed",
                    structure={},
                    collections_used=["eagle_text"],
                    extra={},
                    chunk_count=5 + n % 7,
                    error=None if n % 50 else "the PDF is encrypted",
                )
                for n in range(start, min(count, start + 1000))
            )
    return time.perf_counter() - started


# Set in the page the moment the selector first matches (no test-driver polling in the figure).
WHEN_READY = """(selector) => new MutationObserver((changes, observer) => {
  if (document.querySelector(selector)) {
    window.__ready = performance.now();
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true})"""


def fresh_page(browser: Any, selector: str) -> tuple[Any, Any]:
    context = browser.new_context(locale="en-US")
    context.add_init_script(f"({WHEN_READY})({selector!r})")
    return context, context.new_page()


def ask_paint(browser: Any, url: str, runs: int) -> tuple[list[float], list[float]]:
    """First contentful paint and KB-picker-ready times (ms) of fresh loads of /ui/ask."""
    paints, ready = [], []
    for _ in range(runs):
        context, page = fresh_page(browser, "#kb-picker input")
        page.goto(url + "/ui/ask", wait_until="commit")
        page.wait_for_selector("#kb-picker input")
        ready.append(page.evaluate("() => window.__ready"))
        page.wait_for_function(
            "() => performance.getEntriesByName('first-contentful-paint').length > 0"
        )
        paints.append(
            page.evaluate(
                "() => performance.getEntriesByName('first-contentful-paint')[0].startTime"
            )
        )
        context.close()
    return paints, ready


def timed_get(
    client: httpx.Client, path: str, params: dict[str, Any], runs: int
) -> tuple[float, int]:
    timings, size = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(path, params=params)
        timings.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        size = len(response.content)
    return statistics.median(timings), size


def documents_screen(browser: Any, url: str, kb_name: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        context, page = fresh_page(browser, "#doc-list tr[data-document]")
        page.goto(f"{url}/ui/kb/{kb_name}", wait_until="commit")
        page.wait_for_selector("#doc-list tr[data-document]")
        times.append(page.evaluate("() => window.__ready"))
        context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        settings = load_settings(
            {"EAGLE_DATA_DIR": str(Path(tmp) / "data")}, overrides={"server": {"port": port}}
        )
        api = create_app(settings)
        server = uvicorn.Server(
            uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        eagle = api.state.eagle
        try:
            with sync_playwright() as playwright, httpx.Client(base_url=url) as client:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=ARGS
                )
                eagle.repositories.knowledge_bases.create("empty")
                ask_paint(browser, url, 1)  # warm the server's templates once
                paints_empty, ready_empty = ask_paint(browser, url, args.runs)
                seeded_1k = seed(eagle, "bench1k", 1000)
                paints, ready = ask_paint(browser, url, args.runs)
                seeded_10k = seed(eagle, "bench10k", 10_000)
                paints_11k, ready_11k = ask_paint(browser, url, args.runs)
                kbs_ms, kbs_bytes = timed_get(client, "/ui/fragments/kbs", {}, args.runs * 2)
                first_ms, first_bytes = timed_get(
                    client, "/ui/fragments/documents", {"kb_name": "bench10k"}, args.runs * 2
                )
                last_ms, last_bytes = timed_get(
                    client,
                    "/ui/fragments/documents",
                    {"kb_name": "bench10k", "page": 200},
                    args.runs * 2,
                )
                screen = documents_screen(browser, url, "bench10k", args.runs)
                chromium = browser.version
                browser.close()
        finally:
            server.should_exit = True
            thread.join(timeout=30)

    med = statistics.median
    print(
        f"ui_pages — {datetime.date.today()} — {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, Chromium {chromium}, "
        f"playwright {version('playwright')}, uvicorn {version('uvicorn')}"
    )
    print(f"seeded 1,000 documents in {seeded_1k:.1f} s, 10,000 more in {seeded_10k:.1f} s")
    # The first meaningful paint: the first paint at which the KB picker exists.
    fmp = [max(p, r) for p, r in zip(paints, ready, strict=True)]
    fmp_empty = [max(p, r) for p, r in zip(paints_empty, ready_empty, strict=True)]
    fmp_11k = [max(p, r) for p, r in zip(paints_11k, ready_11k, strict=True)]
    print(
        f"Ask page, 1,000 documents: first meaningful paint (KB picker painted) p50 "
        f"{med(fmp):.0f} ms, max {max(fmp):.0f} ms (target < 1000); first contentful paint p50 "
        f"{med(paints):.0f} ms, picker in the DOM p50 {med(ready):.0f} ms"
    )
    print(
        f"baseline, no documents: first meaningful paint p50 {med(fmp_empty):.0f} ms; "
        f"1,000 documents / none = {med(fmp) / med(fmp_empty):.2f}"
    )
    print(
        f"Ask page, 11,000 documents: first meaningful paint p50 {med(fmp_11k):.0f} ms, "
        f"max {max(fmp_11k):.0f} ms"
    )
    print(f"KB list fragment (3 KBs, 11,000 documents): p50 {kbs_ms:.1f} ms, {kbs_bytes} bytes")
    print(
        f"documents of a 10,000-document KB, page 1: p50 {first_ms:.1f} ms, {first_bytes} bytes; "
        f"page 200: p50 {last_ms:.1f} ms, {last_bytes} bytes (50 rows each)"
    )
    print(f"documents screen until its first rows show: p50 {med(screen):.0f} ms")


if __name__ == "__main__":
    main()
