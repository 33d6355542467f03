"""One embedded app with a small corpus for the whole module: English and Chinese Markdown, a
PDF with pages, in three KBs with tags and custom metadata (deterministic encoder)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.settings import load_settings
from tests.ingest.documents import pdf_bytes

SOLAR = """# Solar Guide

How to install and look after rooftop solar panels.

## Installation

### Roof mounting
Mount the panels on the roof with steel brackets. Use eight bolts per bracket.

### Wiring
Connect the inverter with copper cables. The inverter converts direct current.

## Maintenance
Clean the panels twice a year with water and inspect the brackets for rust.
"""

GARDEN = """# Garden Notes

## Tomatoes
Tomatoes need six hours of sun and deep watering every week.

## Compost
Turn the compost heap monthly; keep it as damp as a wrung sponge.
"""

CHINESE = """# 太阳能指南

## 安装
逆变器需要用铜线连接，支架要用八个螺栓固定在屋顶上。

## 维护
每年清洗两次面板，并检查支架是否生锈。
"""


@dataclass(frozen=True)
class Corpus:
    solar: str
    garden: str
    chinese: str
    report: str


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    data = tmp_path_factory.mktemp("retrieval-app")
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(Path(data)), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"ingest": {"chunk_size": 48, "chunk_overlap": 4}},
    )
    application = await bootstrap(settings)
    yield application
    await application.stop()


def _submit(app: EagleApp, kb: str, name: str, data: bytes, **options: Any) -> str:
    submission = app.ingest.submit_file(
        kb_name=kb, filename=name, stream=io.BytesIO(data), **options
    )
    return submission.document_id


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def corpus(app: EagleApp) -> Corpus:
    for kb in ("alpha", "beta", "zh"):
        app.repositories.knowledge_bases.create(kb)
    solar = _submit(
        app,
        "alpha",
        "solar.md",
        SOLAR.encode(),
        tags=["energy"],
        metadata={"year": 2021, "team": "ops"},
    )
    report = _submit(app, "alpha", "report.pdf", pdf_bytes(), metadata={"year": 2023})
    garden = _submit(
        app, "beta", "garden.md", GARDEN.encode(), tags=["home"], metadata={"team": "home"}
    )
    chinese = _submit(app, "zh", "solar-zh.md", CHINESE.encode())
    await app.queue.join()
    for document_id in (solar, report, garden, chinese):
        assert app.repositories.documents.get(document_id).status == "completed"
    return Corpus(solar, garden, chinese, report)
