"""PDFium is not thread-safe: the parser, visual extraction and the page-image route run on
threads at once (concurrent ingests and requests) and must not crash the process (a segfault
in a page render did, under the test suite, before every use took one lock)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from eagle_rag.api.page_images import page_image
from eagle_rag.ingest.detect import PDF
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.visuals_pdf import PdfVisualOptions, pdf_visuals
from tests.ingest import visual_docs
from tests.ingest.documents import pdf_bytes

ROUNDS = 80  # without the lock, this many crashed the process every time tried


@pytest.mark.slow
def test_renders_parses_and_visual_extraction_run_side_by_side() -> None:
    text_pdf, figure_pdf = pdf_bytes(), visual_docs.report_pdf()
    parser = PdfParser()

    def render(_: int) -> int:
        return len(page_image(figure_pdf, PDF, 1, 900).content)

    def parse(_: int) -> int:
        parsed = parser.parse(ParseContext(data=text_pdf, filename="a.pdf", mime_type=PDF))
        return len(parsed.sections)

    def visuals(_: int) -> int:
        return len(pdf_visuals(figure_pdf, frozenset(), PdfVisualOptions()))

    with ThreadPoolExecutor(max_workers=6) as pool:
        jobs = [pool.map(work, range(ROUNDS)) for work in (render, parse, visuals, render)]
        results = [list(job) for job in jobs]
    # Every call answered the same as the first of its kind: no crash, nothing garbled.
    assert all(len(set(answers)) == 1 and answers[0] > 0 for answers in results), results
