"""Ruled tables of text PDFs with pdfplumber (``page.find_tables()``: lines drawn on the page).

Each table comes back with its box (normalised, top-left origin) and its cells as a Markdown
pipe table whose first row is the header, the form text chunks use for tables too.
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence

import pdfplumber

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp

MIN_ROWS = 2
BUDGET_S = 4.0  # per document
MIN_COLUMNS = 2


def ruled_tables(
    data: bytes, pages: Sequence[int], *, budget_s: float = BUDGET_S
) -> dict[int, list[tuple[BBox, str]]]:
    """``{page: [(bbox, markdown), ...]}`` for the given 1-based pages (only those with tables).

    pdfplumber reads a page ~50x slower than PDFium: after ``budget_s`` seconds the remaining
    pages are left out (their text is still chunked), so a long report cannot cost minutes.
    The seconds are this thread's CPU time: under load a wall-clock budget read fewer pages, and
    the same document lost tables from one run to the next."""
    found: dict[int, list[tuple[BBox, str]]] = {}
    started = time.thread_time()
    with pdfplumber.open(io.BytesIO(data), pages=list(pages)) as pdf:
        for page in pdf.pages:
            if time.thread_time() - started > budget_s:
                break
            width, height = float(page.width), float(page.height)
            for table in page.find_tables():
                rows = [[_cell(c) for c in row] for row in table.extract() if row]
                rows = [row for row in rows if any(row)]
                if len(rows) < MIN_ROWS or max(len(r) for r in rows) < MIN_COLUMNS:
                    continue
                x0, top, x1, bottom = table.bbox
                box = clamp((x0 / width, top / height, x1 / width, bottom / height))
                found.setdefault(int(page.page_number), []).append((box, markdown(rows)))
    return found


def markdown(rows: list[list[str]]) -> str:
    """A pipe table; short rows are padded so every row has the header's width."""
    width = max(len(r) for r in rows)
    padded = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in padded[1:]]
    return "\n".join(lines)


def _cell(value: object) -> str:
    return " ".join(str(value or "").split()).replace("|", "\\|")
