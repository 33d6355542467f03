"""Spreadsheets: each XLSX sheet, or a CSV file, becomes a table section.

An XLSX cell shows its value as formatted where that is certain (``cell_display``: 5%, not 0.05);
a title merged across the top of a sheet's table names the table instead of being its header
(``sheet_titles``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from eagle_rag.errors import EagleError, InvalidInputError
from eagle_rag.ingest.detect import CSV, XLSX, decode_text
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table, result
from eagle_rag.ingest.parsers.cell_display import displayed
from eagle_rag.ingest.parsers.sheet_titles import merged_title, sheet_merges
from eagle_rag.plugins.payloads import ParseResult, TextSection

MAX_ROWS = 200_000


class XlsxParser:
    name = "xlsx"
    supported_mime_types: tuple[str, ...] = (XLSX,)

    def parse(self, context: ParseContext) -> ParseResult:
        from openpyxl import load_workbook

        try:
            # Twice: the values a spreadsheet application cached, and the formulas, for the
            # cells it never computed (files written by openpyxl, pandas and other generators).
            values = load_workbook(io.BytesIO(context.data), read_only=True, data_only=True)
            formulas = load_workbook(io.BytesIO(context.data), read_only=True)
        except Exception as exc:
            raise InvalidInputError(
                f"the XLSX file is corrupt: {exc}", filename=context.filename
            ) from exc
        sections: list[TextSection] = []
        try:
            for sheet, written in zip(values.worksheets, formulas.worksheets, strict=True):
                sections.extend(_readable_sheet(sheet, written, context))
        finally:
            values.close()
            formulas.close()
        if not sections:
            raise InvalidInputError("the workbook has no data", filename=context.filename)
        return result(sections)


def _readable_sheet(sheet: Any, written: Any, context: ParseContext) -> list[TextSection]:
    """openpyxl reads a read-only sheet's XML lazily, as its rows are asked for: a damaged
    sheet raises there (a merge ref "A1:"), and is refused as corrupt, not a crash."""
    try:
        return _sheet_sections(sheet, written, context)
    except EagleError:
        raise
    except Exception as exc:
        raise InvalidInputError(
            f"the XLSX file is corrupt: sheet {sheet.title!r} cannot be read ({exc})",
            filename=context.filename,
        ) from exc


def _sheet_sections(sheet: Any, written: Any, context: ParseContext) -> list[TextSection]:
    """The sheet's heading, its table's title (a section under it) where it has one, its table."""
    read = list(_limited(_with_formulas(_displayed_rows(sheet), written), context))
    title, at = merged_title(read, partial(sheet_merges, context.data, sheet))
    rows = _trimmed([row for index, row in enumerate(read) if index != at])
    if not rows:
        return []
    sections = [TextSection("", heading=sheet.title, level=1)]
    if title:
        sections.append(TextSection("", heading=title, level=2))
    return [*sections, TextSection(markdown_table(rows), kind="table")]


class CsvParser:
    name = "csv"
    supported_mime_types: tuple[str, ...] = (CSV,)

    def parse(self, context: ParseContext) -> ParseResult:
        text = decode_text(context.data)
        if text is None or not text.strip():
            raise InvalidInputError("the CSV file has no text", filename=context.filename)
        try:
            dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel_tab if context.filename.lower().endswith(".tsv") else csv.excel
        rows = _trimmed(list(_limited(csv.reader(io.StringIO(text), dialect), context)))
        return result([TextSection(markdown_table(rows), kind="table")])


def _displayed_rows(sheet: Any) -> Iterator[list[object]]:
    """Each row's values as the sheet shows them (``cell_display``)."""
    for row in sheet.iter_rows():
        yield [displayed(cell.value, getattr(cell, "number_format", None)) for cell in row]


def _with_formulas(values: Iterable[Sequence[object]], written: Any) -> Iterator[Sequence[object]]:
    """Each row's cached values; a formula cell without one shows its formula (``=B2+C2``)
    rather than nothing."""
    for cached, raw in zip(values, written.iter_rows(values_only=True), strict=False):
        yield [
            r if c is None and isinstance(r, str) and r.startswith("=") else c
            for c, r in zip(cached, raw, strict=False)
        ]


def _limited(rows: Iterable[Sequence[object]], context: ParseContext) -> Iterator[Sequence[object]]:
    for count, row in enumerate(rows):
        if count >= MAX_ROWS:
            raise InvalidInputError(
                f"the table has more than {MAX_ROWS} rows", filename=context.filename
            )
        yield row


def _trimmed(rows: list[Sequence[object]]) -> list[list[object]]:
    """Drop empty rows and the columns empty in every row (sheets often report a padded used
    range; a 2 KB sheet with values in columns A and XFD only was 16,384 columns wide)."""
    kept = [list(r) for r in rows if any(v not in (None, "") for v in r)]
    used = sorted({i for r in kept for i, v in enumerate(r) if v not in (None, "")})
    return [[r[i] for i in used if i < len(r)] for r in kept]
