"""Pictures in Word and PowerPoint files (and raster figures of text PDFs) through the real
pipeline: placeholder pictures are visuals, a picture's words are read by OCR into its summary
(and into the text of a file that is only pictures), and a picture over the pixel limit is
skipped before it is decoded."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.ingest.pixelrag.cpu_budget import CpuBudget
from eagle_rag.ingest.pixelrag.engine import OcrPage
from eagle_rag.ingest.pixelrag.images import MAX_PIXELS
from eagle_rag.ingest.pixelrag.picture_ocr import PictureOcr
from tests.ingest import scans
from tests.ingest import visual_docs as vd

ASYNC = pytest.mark.asyncio(loop_scope="module")  # the tests through the app


def _visuals(app: EagleApp, document_id: str) -> list[dict[str, Any]]:
    return app.vectors.query(VISUAL_COLLECTION, f.eq("document_id", document_id))


@ASYNC
async def test_a_picture_in_a_slide_placeholder_is_a_visual(app: EagleApp, kb: str) -> None:
    document_id = await vd.ingest_completed(app, kb, vd.placeholder_deck_pptx(), "placeholder.pptx")
    [picture] = _visuals(app, document_id)
    assert (picture["chunk_type"], picture["page"]) == ("image", 1)
    assert "Northern Region" in picture["parent_section"]
    x0, y0, x1, y1 = picture["metadata"]["bbox"]
    assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 and x1 - x0 > 0.3


@ASYNC
async def test_a_picture_over_the_pixel_limit_is_skipped_and_the_document_ingests(
    app: EagleApp, kb: str, caplog: pytest.LogCaptureFixture
) -> None:
    bomb = vd.oversized_png()  # 100 megapixels declared in its header, over MAX_PIXELS
    assert len(bomb) < 200_000
    width, height = (int.from_bytes(bomb[i : i + 4], "big") for i in (16, 20))  # PNG IHDR
    assert width * height > MAX_PIXELS
    document_id = await vd.ingest_completed(app, kb, vd.docx_with(bomb), "bomb.docx")
    assert _visuals(app, document_id) == []
    texts = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
    assert any(vd.DOC_TEXT in t["text"] for t in texts)
    assert "over the limit" in caplog.text


@ASYNC
async def test_a_word_file_that_is_only_a_scan_is_searchable(app: EagleApp, kb: str) -> None:
    scan = scans.encode(scans.en_page(), "PNG")
    document_id = await vd.ingest_completed(
        app, kb, vd.docx_with(scan, text="", heading=""), "scan.docx"
    )
    texts = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
    words = scans.squash("Forklift inspections were completed")
    assert any(words in scans.squash(t["text"]) for t in texts)
    [picture] = _visuals(app, document_id)
    assert words in scans.squash(picture["content_summary"])
    assert picture["source_chunk_id"] in {t["id"] for t in texts}  # anchored by its words


@ASYNC
async def test_a_deck_of_screenshots_is_searchable(app: EagleApp, kb: str) -> None:
    document_id = await vd.ingest_completed(app, kb, _screenshot_deck(), "screens.pptx")
    texts = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
    assert any(scans.squash("Forklift inspections") in scans.squash(t["text"]) for t in texts)
    assert all(1 in t["page_nums"] for t in texts if "Forklift" in t["text"])


def _screenshot_deck() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title, no text
    slide.shapes.add_picture(
        io.BytesIO(scans.encode(scans.en_page(), "PNG")), Inches(1), Inches(1), width=Inches(8)
    )
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


@ASYNC
async def test_a_raster_figure_of_a_text_pdf_is_found_by_its_words(app: EagleApp, kb: str) -> None:
    screenshot = scans.encode(scans.en_page(), "PNG")
    document_id = await vd.ingest_completed(app, kb, vd.screenshot_pdf(screenshot), "notice.pdf")
    [figure] = _visuals(app, document_id)
    assert figure["chunk_type"] == "image"
    assert scans.squash("Forklift inspections were completed") in scans.squash(
        figure["content_summary"]
    )


def test_picture_ocr_stops_at_its_budget_and_keeps_text_it_has() -> None:
    reads: list[tuple[int, int]] = []

    def read(image: Image.Image, seconds: float) -> OcrPage:
        assert seconds > 0  # what is left of the budget: the reader stops there
        reads.append(image.size)
        return OcrPage(image.width, image.height, 0, (), ())

    picture = Image.new("RGB", (100, 100), "white")
    spent = PictureOcr(read, budget=CpuBudget(0.0))
    assert spent.text(picture, own="Q1 Q2") == "Q1 Q2" and reads == []
    enough = "Quarterly output by region, in megawatts, 2019 to 2023"
    assert PictureOcr(read).text(picture, own=enough) == enough and reads == []
    known = PictureOcr(read, known={"k": "read by the parser"})
    assert known.text(picture, key="k") == "read by the parser" and reads == []
    assert PictureOcr(read).text(picture, own="Q1") == "Q1" and reads == [(100, 100)]


@ASYNC
async def test_a_word_picture_below_a_heading_is_in_its_section_with_its_caption(
    app: EagleApp, kb: str
) -> None:
    """The picture's neighbour was the heading above it, whose words no chunk holds: it had no
    source chunk, the file name for its section, and the caption below it was not its caption."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.add_heading("Overview", level=1)
    document.add_paragraph("The fleet grew this year.")
    document.add_heading("Revenue", level=1)
    document.add_picture(io.BytesIO(vd.chart_png()), width=Inches(4))
    document.add_paragraph("Figure 2: Revenue by region", style="Caption")
    document.add_paragraph("The north led the growth.")
    out = io.BytesIO()
    document.save(out)
    document_id = await vd.ingest_completed(app, kb, out.getvalue(), "revenue.docx")
    [picture] = _visuals(app, document_id)
    texts = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
    source = next(t for t in texts if t["id"] == picture["source_chunk_id"])
    assert "Figure 2: Revenue by region" in source["text"]
    assert picture["parent_section"].endswith("Revenue")
    assert picture["content_summary"].startswith("Figure 2: Revenue by region")
