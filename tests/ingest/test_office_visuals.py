"""Pictures in Word and PowerPoint files through the real pipeline: placeholder pictures are
visuals, and a picture over the pixel limit is skipped before it is decoded."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.ingest.pixelrag.images import MAX_PIXELS
from tests.ingest import visual_docs as vd

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _ingest(app: EagleApp, kb: str, data: bytes, name: str) -> str:
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(data)
    )
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    return document.id


def _visuals(app: EagleApp, document_id: str) -> list[dict[str, Any]]:
    return app.vectors.query(VISUAL_COLLECTION, f.eq("document_id", document_id))


async def test_a_picture_in_a_slide_placeholder_is_a_visual(app: EagleApp, kb: str) -> None:
    document_id = await _ingest(app, kb, vd.placeholder_deck_pptx(), "placeholder.pptx")
    [picture] = _visuals(app, document_id)
    assert (picture["chunk_type"], picture["page"]) == ("image", 1)
    assert "Northern Region" in picture["parent_section"]
    x0, y0, x1, y1 = picture["metadata"]["bbox"]
    assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 and x1 - x0 > 0.3


async def test_a_picture_over_the_pixel_limit_is_skipped_and_the_document_ingests(
    app: EagleApp, kb: str, caplog: pytest.LogCaptureFixture
) -> None:
    bomb = vd.oversized_png()  # 100 megapixels declared in its header, over MAX_PIXELS
    assert len(bomb) < 200_000
    width, height = (int.from_bytes(bomb[i : i + 4], "big") for i in (16, 20))  # PNG IHDR
    assert width * height > MAX_PIXELS
    document_id = await _ingest(app, kb, vd.docx_with(bomb), "bomb.docx")
    assert _visuals(app, document_id) == []
    texts = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
    assert any(vd.DOC_TEXT in t["text"] for t in texts)
    assert "over the limit" in caplog.text
