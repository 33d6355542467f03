"""A 500-page scanned PDF for the long-scan tests: one JPEG page, stored once, shown on every
page (0.2 MB), so OCR really runs on each page while the file stays small."""

from __future__ import annotations

import io
from functools import cache

from tests.ingest import scans

PAGES = 500


@cache
def long_scan() -> bytes:
    from fpdf import FPDF

    jpeg = scans.encode(scans.en_page(), "JPEG", quality=90)
    pdf = FPDF(orientation="L", format=(105, 148))
    for _ in range(PAGES):
        pdf.add_page()
        pdf.image(io.BytesIO(jpeg), x=0, y=0, w=scans.PAGE_MM[0], h=scans.PAGE_MM[1])
    return bytes(pdf.output())
