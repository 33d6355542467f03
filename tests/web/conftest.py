"""Browser tests: a real server (uvicorn on the real app, temp data dir) and Debian's Chromium.

Playwright drives ``/usr/bin/chromium`` (never ``playwright install``); the Makefile installs the
Debian packages when they are missing.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.server import RunningServer, running_server

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not shutil.which("chromium") and not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is missing: apt-get install -y chromium chromium-driver")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(
        tmp_path_factory.mktemp("web"), ingest={"max_file_bytes": 2_000_000}
    ) as running:
        yield running


class NetworkLog:
    """Every URL the page asked for, to prove it talks to its own server only."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def foreign(self, origin: str) -> list[str]:
        own = (origin + "/", "blob:", "data:")
        return [u for u in self.urls if not u.startswith(own) and u != origin]


@pytest.fixture
def page(browser: Any, server: RunningServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    log = NetworkLog()
    context.on("request", lambda request: log.urls.append(request.url))
    opened = context.new_page()
    opened.network_log = log
    opened.errors = []
    opened.on("pageerror", lambda error: opened.errors.append(str(error)))
    opened.set_default_timeout(30_000)
    try:
        yield opened
    finally:
        context.close()
