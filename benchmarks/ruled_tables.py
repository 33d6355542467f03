"""Ruled tables of text-born PDFs: the project's reader vs pdfplumber reading the pages itself.

The project reads a ruled table with pdfplumber's table finder over the lines PDFium draws and
the cells' text from PDFium's text layer (``ingest/pixelrag/visuals_tables.py``); the baseline is
pdfplumber alone (``page.find_tables()`` then ``table.extract()``), which has pdfminer parse each
whole page. Both read the same pages, those the extraction sends (``visuals_pdf.may_hold_table``:
6-150 path objects whose lines can form a grid), with no time budget. Printed per document and in
all: tables found by each, tables whose boxes match (IoU >= 0.9), the share of matched tables
with the same text, the mean text similarity, and each side's CPU seconds with their ratio.

    .venv/bin/python -m benchmarks.ruled_tables ../shared/datasets/longdocs-dev/pdf
"""

from __future__ import annotations

import argparse
import difflib
import io
import time
from pathlib import Path

import pdfplumber
import pypdfium2 as pdfium

from eagle_rag.ingest.pixelrag.geometry import BBox, area, overlap
from eagle_rag.ingest.pixelrag.visuals_pdf import may_hold_table
from eagle_rag.ingest.pixelrag.visuals_tables import markdown, ruled_tables

SAME_BOX = 0.9  # intersection over union
Tables = dict[int, list[tuple[BBox, str]]]  # page: [(box, markdown), ...]


def _grid_pages(document: pdfium.PdfDocument) -> list[int]:
    pages = []
    for number in range(1, len(document) + 1):
        page = document[number - 1]
        try:
            if may_hold_table(page):
                pages.append(number)
        finally:
            page.close()
    return pages


def _project(document: pdfium.PdfDocument, pages: list[int]) -> Tables:
    found = {}
    for number in pages:
        page = document[number - 1]
        try:
            found[number] = ruled_tables(page)
        finally:
            page.close()
    return found


def _pdfplumber(data: bytes, pages: list[int]) -> Tables:
    """What the extraction did before: pdfplumber's own page reading, same filters."""
    found: Tables = {}
    with pdfplumber.open(io.BytesIO(data), pages=pages) as pdf:
        for page in pdf.pages:
            width, height = float(page.width), float(page.height)
            tables = found.setdefault(int(page.page_number), [])
            for table in page.find_tables():
                rows = [[_cell(c) for c in row] for row in table.extract() if row]
                rows = [row for row in rows if any(row)]
                if len(rows) < 2 or max(len(r) for r in rows) < 2:
                    continue
                x0, top, x1, bottom = table.bbox
                tables.append(
                    ((x0 / width, top / height, x1 / width, bottom / height), markdown(rows))
                )
    return found


def _cell(value: object) -> str:
    return " ".join(str(value or "").split()).replace("|", "\\|")


def _iou(a: BBox, b: BBox) -> float:
    shared = overlap(a, b)
    return shared / max(1e-9, area(a) + area(b) - shared)


def _compare(ours: Tables, base: Tables) -> tuple[int, int, float]:
    """pdfplumber's tables that ours matches by box, how many of them read the same text, and
    the sum of their text similarities."""
    matched, same, similarity = 0, 0, 0.0
    for number, tables in base.items():
        for box, text in tables:
            best = max(ours.get(number, []), key=lambda t: _iou(box, t[0]), default=None)
            if best is None or _iou(box, best[0]) < SAME_BOX:
                continue
            matched += 1
            same += best[1] == text
            similarity += difflib.SequenceMatcher(None, text, best[1]).ratio()
    return matched, same, similarity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    totals = {"ours": 0, "base": 0, "matched": 0, "same": 0, "sim": 0.0, "cpu_ours": 0.0}
    totals["cpu_base"] = 0.0
    for path in sorted(args.folder.glob("*.pdf")):
        data = path.read_bytes()
        document = pdfium.PdfDocument(data)
        try:
            pages = _grid_pages(document)
            if not pages:
                continue
            started = time.process_time()
            ours = _project(document, pages)
            cpu_ours = time.process_time() - started
        finally:
            document.close()
        started = time.process_time()
        base = _pdfplumber(data, pages)
        cpu_base = time.process_time() - started
        matched, same, similarity = _compare(ours, base)
        counts = sum(map(len, ours.values())), sum(map(len, base.values()))
        for key, value in zip(
            ("ours", "base", "matched", "same", "sim", "cpu_ours", "cpu_base"),
            (*counts, matched, same, similarity, cpu_ours, cpu_base),
            strict=True,
        ):
            totals[key] += value
        print(
            f"{path.stem[:40]:40} grid pages {len(pages):3}  tables ours {counts[0]:3} "
            f"pdfplumber {counts[1]:3} matched {matched:3} same text {same:3}  "
            f"CPU {cpu_ours:5.2f}s / {cpu_base:6.2f}s",
            flush=True,
        )
    matched = max(1, int(totals["matched"]))
    print(
        f"total tables ours {totals['ours']} pdfplumber {totals['base']} matched "
        f"{totals['matched']} ({totals['matched'] / max(1, totals['base']):.3f} of pdfplumber's)"
        f"  same text {totals['same'] / matched:.3f}  mean similarity {totals['sim'] / matched:.3f}"
    )
    print(
        f"CPU ours {totals['cpu_ours']:.2f}s pdfplumber {totals['cpu_base']:.2f}s "
        f"ratio {totals['cpu_ours'] / max(1e-9, totals['cpu_base']):.3f}"
    )


if __name__ == "__main__":
    main()
