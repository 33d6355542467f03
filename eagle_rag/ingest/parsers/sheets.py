"""Spreadsheets: each XLSX sheet, or a CSV file, becomes a table section."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import CSV, XLSX, decode_text
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table, result
from eagle_rag.plugins.payloads import ParseResult, TextSection

MAX_ROWS = 200_000


class XlsxParser:
    name = "xlsx"
    supported_mime_types: tuple[str, ...] = (XLSX,)

    def parse(self, context: ParseContext) -> ParseResult:
        from openpyxl import load_workbook

        try:
            workbook = load_workbook(io.BytesIO(context.data), read_only=True, data_only=True)
        except Exception as exc:
            raise InvalidInputError(
                f"the XLSX file is corrupt: {exc}", filename=context.filename
            ) from exc
        sections: list[TextSection] = []
        try:
            for sheet in workbook.worksheets:
                rows = _trimmed(list(_limited(sheet.iter_rows(values_only=True), context)))
                if rows:
                    sections.append(TextSection("", heading=sheet.title, level=1))
                    sections.append(TextSection(markdown_table(rows), kind="table"))
        finally:
            workbook.close()
        if not sections:
            raise InvalidInputError("the workbook has no data", filename=context.filename)
        return result(sections)


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


def _limited(rows: Iterable[Sequence[object]], context: ParseContext) -> Iterator[Sequence[object]]:
    for count, row in enumerate(rows):
        if count >= MAX_ROWS:
            raise InvalidInputError(
                f"the table has more than {MAX_ROWS} rows", filename=context.filename
            )
        yield row


def _trimmed(rows: list[Sequence[object]]) -> list[list[object]]:
    """Drop empty rows and trailing empty columns (sheets often report a padded used range)."""
    kept = [list(r) for r in rows if any(v not in (None, "") for v in r)]
    width = max((i + 1 for r in kept for i, v in enumerate(r) if v not in (None, "")), default=0)
    return [r[:width] for r in kept]
