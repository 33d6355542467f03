"""PDFs PDFium refuses are re-read by a second reader (pypdf) before they are given up; a title
PDFium cannot decode costs only its bad characters; encrypted files are refused clearly."""

from __future__ import annotations

import asyncio
import io

import pypdfium2 as pdfium
import pytest
from pypdf import PdfReader, PdfWriter

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import InvalidInputError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.pixelrag.visuals_pdf import PdfVisualOptions, pdf_visuals
from tests.ingest import documents as docs
from tests.ingest import pdf_codecs, scans, visual_docs
from tests.ingest.documents import without_root

TITLE, BODY = "Boiler Room Log", "The boiler pressure was checked every morning."


def _typeset() -> bytes:
    return scans.text_pdf([(TITLE, BODY)])


def _bad_header(pdf: bytes) -> bytes:
    return pdf.replace(b"%PDF-", b"%XYZ-", 1)


def _refused_by_pdfium(data: bytes) -> bool:
    try:
        pdfium.PdfDocument(data).close()
    except pdfium.PdfiumError:
        return True
    return False


@pytest.mark.parametrize("damage", [without_root, _bad_header], ids=["no-root", "bad-header"])
def test_a_pdf_pdfium_refuses_is_read_through_the_second_reader(damage: object) -> None:
    data = damage(_typeset())  # type: ignore[operator]
    assert _refused_by_pdfium(data)
    parsed = PdfParser().parse(ParseContext(data, "damaged.pdf", d.PDF))
    assert parsed.metadata["repaired"] is True and parsed.metadata["ocr_pages"] == []
    assert [s.heading for s in parsed.sections if s.heading] == [TITLE]
    assert BODY in " ".join(parsed.text.split())
    assert "repaired" not in PdfParser().parse(ParseContext(_typeset(), "ok.pdf", d.PDF)).metadata


def test_a_scan_with_a_broken_trailer_is_repaired_then_read_by_ocr() -> None:
    page = scans.en_page()
    data = without_root(pdf_codecs.image_pdf(page, pdf_codecs.grayscale(page)))
    assert _refused_by_pdfium(data)
    parsed = PdfParser(OcrEngine()).parse(ParseContext(data, "scan.pdf", d.PDF))
    assert parsed.metadata["repaired"] is True and parsed.metadata["ocr_pages"] == [1]
    assert "forklift" in parsed.text.casefold()


def _titled(pdf: bytes, raw_title: bytes) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.add_metadata({"/Title": "PLACEHOLDER"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue().replace(b"(PLACEHOLDER)", raw_title)  # xref offsets move: PDFium
    # and pypdf both rebuild them, as they do for real files edited by hand


def test_a_title_in_broken_utf16_costs_only_its_bad_characters() -> None:
    # "Annual Report" in UTF-16 with a lone surrogate: pypdfium2's metadata reader raises.
    raw = b"<FEFF" + "Annual Report".encode("utf-16-be").hex().upper().encode() + b"D800>"
    data = _titled(_typeset(), raw)
    document = pdfium.PdfDocument(data)
    with pytest.raises(UnicodeDecodeError):
        document.get_metadata_dict()
    document.close()
    parsed = PdfParser().parse(ParseContext(data, "report.pdf", d.PDF))
    assert parsed.metadata["title"] == "Annual Report"
    assert BODY in " ".join(parsed.text.split())


def test_a_file_neither_reader_can_open_is_refused_with_both_reasons() -> None:
    with pytest.raises(InvalidInputError) as caught:
        PdfParser().parse(ParseContext(b"%PDF-1.4\n" + b"\x13\x37" * 500, "junk.pdf", d.PDF))
    message = str(caught.value)
    assert "corrupt or unreadable" in message and "a second reader also failed" in message


@pytest.mark.parametrize("damage", [None, without_root], ids=["intact", "no-root"])
def test_an_encrypted_pdf_is_refused_clearly_by_either_reader(damage: object) -> None:
    data = docs.encrypted_pdf_bytes()
    data = damage(data) if damage else data  # type: ignore[operator]
    with pytest.raises(InvalidInputError, match="encrypted; upload it without a password"):
        PdfParser().parse(ParseContext(data, "secret.pdf", d.PDF))


@pytest.mark.asyncio(loop_scope="module")
async def test_a_repaired_pdf_ingests_end_to_end(app: EagleApp, kb: str) -> None:
    submission = await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name=kb,
        filename="damaged.pdf",
        stream=io.BytesIO(without_root(_typeset())),
    )
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    rows = app.vectors.query(
        TEXT_COLLECTION, f.eq("document_id", document.id), output_fields=["text"]
    )
    assert any("boiler pressure" in str(r["text"]) for r in rows)


def test_a_repaired_pdf_keeps_its_figures() -> None:
    """Visual extraction reads the same rewrite the parser read, not the bytes PDFium refused."""
    damaged = without_root(visual_docs.report_pdf())
    assert _refused_by_pdfium(damaged)
    found = pdf_visuals(damaged, frozenset(), PdfVisualOptions())
    assert any(v.kind == "image" for v in found), [v.kind for v in found]
