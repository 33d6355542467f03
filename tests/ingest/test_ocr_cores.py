"""OCR in a worker: models loaded once and warmed when the workers start, and pages read on
cores taken from the text embedder's CoreBudget (real rapidocr, real offline embedder)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine, OcrPage
from eagle_rag.models.core_budget import CoreBudget
from eagle_rag.settings import load_settings
from tests.ingest import scans


def _wait(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_page_is_read_on_a_core_of_the_shared_budget() -> None:
    cores = CoreBudget(1)
    engine = OcrEngine(cores=cores)
    engine.warm()  # the models load outside the test's window
    read: list[OcrPage] = []
    with cores.take(1):  # the embedder holds the only core
        reader = threading.Thread(target=lambda: read.append(engine.read(scans.en_page())))
        reader.start()
        # The page waits in the budget's line until the core is free.
        assert _wait(lambda: len(cores._line) == 1, timeout=10)
        reader.join(timeout=0.5)
        assert reader.is_alive() and not read
    reader.join(timeout=120)
    assert read and read[0].lines  # then it is read, on that core
    assert cores._free == 1 and not cores._line


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    # The real offline embedder (its model loads only if something is embedded).
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(Path(tmp_path_factory.mktemp("ocr-cores")))},
        overrides={"ingest": {"ocr_warm": True}},
    )
    application = await bootstrap(settings)
    yield application
    await application.stop()


def _parsers(app: EagleApp) -> tuple[PdfParser, ImageParser]:
    components = [r.component for r in app.registries.parsers]
    [pdf] = [p for p in components if isinstance(p, PdfParser)]
    [image] = [p for p in components if isinstance(p, ImageParser)]
    return pdf, image


@pytest.mark.asyncio(loop_scope="module")
async def test_the_workers_warm_one_engine_that_shares_the_embedders_cores(
    app: EagleApp,
) -> None:
    pdf, image = _parsers(app)
    assert pdf.ocr is image.ocr  # one engine: its models load once for both
    assert pdf.ocr.cores is app.text_encoder.core_budget  # type: ignore[attr-defined]
    assert _wait(lambda: pdf.ocr.loaded, timeout=180)  # warmed at start, before any scan


@pytest.mark.asyncio(loop_scope="module")
async def test_without_ocr_warm_the_models_wait_for_the_first_scan(tmp_path: Path) -> None:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_ENCODER_MODE": "deterministic"}
    )
    assert settings.ingest.ocr_warm is False  # the embedded default; production turns it on
    production = load_settings({"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_RAG_PROFILE": "production"})
    assert production.ingest.ocr_warm is True
    application = await bootstrap(settings)
    try:
        pdf, _ = _parsers(application)
        await asyncio.sleep(1.0)
        assert not pdf.ocr.loaded and pdf.ocr.cores is None  # the hashing encoder has no cores
    finally:
        await application.stop()
