"""Pages whose text layer is not the page's text: a scan under an e-filing stamp and a Bates
number, and text set in a font whose glyphs map to nothing readable. Both are OCR'd; a text
page with a big photo is not."""

from __future__ import annotations

import asyncio
import io
import re

import pytest
from PIL import Image

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import InvalidInputError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from tests.ingest import scans
from tests.ingest import visual_docs as vd


def _parse(ocr: OcrEngine, data: bytes, *, pixels: bool = True) -> tuple[str, list[int]]:
    parsed = PdfParser(ocr).parse(ParseContext(data, "page.pdf", d.PDF, ocr=pixels))
    return parsed.text, list(parsed.metadata["ocr_pages"])


def test_a_stamped_scan_is_ocrd_not_read_as_its_stamp(ocr: OcrEngine) -> None:
    text, ocr_pages = _parse(ocr, scans.stamped_scan(scans.en_page()))
    assert ocr_pages == [1]
    assert scans.squash(scans.EN_BODY) in scans.squash(text)


def test_a_text_page_with_a_page_sized_photo_keeps_its_text_layer(ocr: OcrEngine) -> None:
    text, ocr_pages = _parse(ocr, _text_over_photo())
    assert ocr_pages == []
    assert vd.INTRO in " ".join(text.split())


def _text_over_photo() -> bytes:
    """An A4 page: a photo behind the whole page, a heading and three paragraphs over it."""
    from fpdf import FPDF

    photo = Image.new("RGB", (600, 850), (225, 235, 245))
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.image(io.BytesIO(scans.encode(photo, "PNG")), x=0, y=0, w=210, h=297)
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "Wind Farm Report", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    for text in (vd.INTRO, vd.TABLE_INTRO, vd.OUTRO):
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def _garbled() -> bytes:
    """English set in an embedded font whose ToUnicode map sends every glyph to U+E000: it
    renders as legible text, and its text layer is private-use noise. No image on the page."""
    import noto_cjk_sans_jp_regular as font
    from fpdf import FPDF
    from pypdf import PdfReader, PdfWriter

    pdf = FPDF(orientation="L", format=(105, 148))
    pdf.add_page()
    pdf.add_font("cjk", fname=str(font.FONT_PATH))
    pdf.set_font("cjk", size=12)
    pdf.multi_cell(0, 7, scans.EN_BODY, new_x="LMARGIN", new_y="NEXT")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(bytes(pdf.output()))))
    for ref in writer.pages[0]["/Resources"]["/Font"].values():
        cmap = ref.get_object()["/ToUnicode"].get_object()
        text = cmap.get_data().decode("latin-1")
        noise = re.sub(r"(<[0-9A-F]{4}>\s*)<[0-9A-F]{4,}>", r"\1<E000>", text, flags=re.I)
        cmap.set_data(noise.encode("latin-1"))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_garbled_text_layer_is_ocrd_even_without_an_image(ocr: OcrEngine) -> None:
    text, ocr_pages = _parse(ocr, _garbled())
    assert ocr_pages == [1]
    assert "\ue000" not in text
    assert scans.squash("Forklift inspections were completed") in scans.squash(text)


def test_a_garbled_text_layer_is_not_indexed_where_pages_are_not_ocrd(ocr: OcrEngine) -> None:
    with pytest.raises(InvalidInputError, match="no text layer"):
        _parse(ocr, _garbled(), pixels=False)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_stamped_scan_ingests_with_its_body_in_the_chunks(app: EagleApp, kb: str) -> None:
    data = scans.stamped_scan(scans.en_page())
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename="filing.pdf", stream=io.BytesIO(data)
    )
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    rows = app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document.id))
    assert scans.squash("Forklift inspections were completed") in scans.squash(
        " ".join(r["text"] for r in rows)
    )
