"""A spreadsheet table's title: the text merged across the cells above its header row
("Quarterly Report" over "Metric | Value | Date"). Taken as the header it named every column
after the title and pushed the real header into the data; it is the table's heading instead.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Sequence
from typing import Any
from xml.etree.ElementTree import ParseError, iterparse

Merge = tuple[int, int, int, int]  # first column, first row, last column, last row (1-based)

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def merged_title(
    rows: Sequence[Sequence[object]], merges: Callable[[], list[Merge]]
) -> tuple[str, int]:
    """The title and its index in ``rows`` (``rows[0]`` is row 1), or ("", -1): the only value
    of the first row with any, in a cell merged across columns of that row alone, above more
    rows. ``merges`` is called only when that row could be a title (reading them is a pass
    over the sheet's XML)."""
    index = next((i for i, row in enumerate(rows) if any(_filled(v) for v in row)), -1)
    filled = (
        [(column, v) for column, v in enumerate(rows[index]) if _filled(v)] if index >= 0 else []
    )
    if len(filled) != 1 or not any(_filled(v) for row in rows[index + 1 :] for v in row):
        return "", -1
    (column, value), number = filled[0], index + 1
    for first_column, first_row, last_column, last_row in merges():
        if (first_column, first_row, last_row) == (column + 1, number, number) and (
            last_column > first_column
        ):
            return " ".join(str(value).split()), index
    return "", -1


def sheet_merges(data: bytes, sheet: Any) -> list[Merge]:
    """The merged ranges of a read-only openpyxl sheet (which has no ``merged_cells``), read
    from its XML part in ``data`` a row at a time; none where that part cannot be read (the
    merges only name a title: the sheet is read without them)."""
    try:
        return _merges(data, sheet)
    except (AttributeError, KeyError, OSError, zipfile.BadZipFile, ParseError):
        return []


def _merges(data: bytes, sheet: Any) -> list[Merge]:
    from openpyxl.utils import range_boundaries

    merges: list[Merge] = []
    rows: Any = None
    # openpyxl keeps a read-only sheet's part name only as this private attribute.
    with zipfile.ZipFile(io.BytesIO(data)) as archive, archive.open(sheet._worksheet_path) as xml:
        for event, element in iterparse(xml, events=("start", "end")):
            if event == "start" and element.tag == f"{_MAIN}sheetData":
                rows = element
            elif event == "end" and element.tag == f"{_MAIN}row" and rows is not None:
                rows.remove(element)  # a sheet's rows are not kept in memory
            elif event == "end" and element.tag == f"{_MAIN}mergeCell":
                try:
                    bounds = range_boundaries(element.get("ref", ""))
                except (TypeError, ValueError):  # "A1:": a damaged ref costs that merge only
                    continue
                if None not in bounds:
                    merges.append(bounds)
    return merges


def _filled(value: object) -> bool:
    return value not in (None, "")
