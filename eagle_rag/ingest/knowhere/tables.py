"""Cutting a table into chunks: whole, or by rows under the header, or by columns."""

from __future__ import annotations

import re
from collections.abc import Iterator

from eagle_rag.ingest.knowhere.cuts import TokenCounter, fits_stored, hard_split, last_fitting
from eagle_rag.ingest.knowhere.tree import Block


def table_chunks(block: Block, budget: int, count: TokenCounter) -> Iterator[tuple[str, int, int]]:
    """Whole if it fits; else by rows, each piece led by the header (offsets cover the rows); a
    row too wide for a chunk beside the header is split by columns (see :func:`_wide_row`)."""
    if fits_stored(block.text) and count(block.text) <= budget:
        yield block.text, block.start, block.end
        return
    lines = block.text.split("\n")
    header = "\n".join(lines[:2]) if len(lines) > 1 and set(lines[1]) <= set("|-: ") else lines[0]
    body = lines[2:] if header.count("\n") else lines[1:]
    header_tokens = count(header)
    offset = block.start + len(header) + 1
    rows: list[str] = []
    rows_start = offset
    for line in body:
        piece = "\n".join([*rows, line])
        if rows and (
            not fits_stored(f"{header}\n{piece}") or header_tokens + count(piece) > budget
        ):
            text = "\n".join(rows)
            yield f"{header}\n{text}", rows_start, rows_start + len(text)
            rows, rows_start = [], offset
        if not rows and (
            not fits_stored(f"{header}\n{line}") or header_tokens + count(line) > budget
        ):
            yield from _wide_row(header, line, offset, budget, count)
            rows_start = offset + len(line) + 1
        else:
            rows.append(line)
        offset += len(line) + 1
    if rows:
        text = "\n".join(rows)
        yield f"{header}\n{text}", rows_start, rows_start + len(text)


# A cell boundary of a Markdown pipe row (cells escape their own pipes as "\|").
_CELL_BOUNDARY = re.compile(r"(?<!\\) \| ")


def _cells(line: str) -> list[str] | None:
    """The cells of a Markdown pipe row, or None for a line that is not one."""
    if len(line) < 4 or not (line.startswith("| ") and line.endswith(" |")):
        return None
    return _CELL_BOUNDARY.split(line[2:-2])


def _wide_row(
    header: str, line: str, start: int, budget: int, count: TokenCounter
) -> Iterator[tuple[str, int, int]]:
    """A row that does not fit a chunk beside the header (thousands of columns; the header
    alone may not fit): split by columns, each piece a table of those columns, their header
    and their cells, leaving out the row's empty cells; offsets cover the row. A single column
    too big for a chunk, or a row that is not a pipe row, is cut like an over-long sentence."""
    names, cells = _cells(header.split("\n")[0]), _cells(line)
    if names is None or cells is None:
        for unit in hard_split(line, start, budget, count, None):
            yield unit.text, start, start + len(line)
        return
    # The row's filled columns only: empty cells under a wide header (a short or sparse row)
    # made chunks of nothing but column names, tens of thousands for a 2 KB spreadsheet.
    filled = [i for i, value in enumerate(cells) if value.strip()]
    heads = [names[i] if i < len(names) else "" for i in filled]
    values = [cells[i] for i in filled]
    width = len(filled)
    rule = "\n" in header

    def columns(first: int, last: int) -> str:
        head = "| " + " | ".join(heads[first:last]) + " |"
        ruled = f"{head}\n|{'---|' * (last - first)}" if rule else head
        return f"{ruled}\n| " + " | ".join(values[first:last]) + " |"

    first, guess = 0, 8
    while first < width:

        def fits(last: int, first: int = first) -> bool:
            text = columns(first, last)
            return fits_stored(text) and count(text) <= budget

        last = last_fitting(first + 1, width, fits, first + guess)
        if last == first + 1 and not fits(last):
            for text in _long_cell(columns(first, last), values[first], budget, count):
                yield text, start, start + len(line)
        else:
            yield columns(first, last), start, start + len(line)
        first, guess = last, last - first


def _long_cell(column: str, value: str, budget: int, count: TokenCounter) -> Iterator[str]:
    """A cell too big for a chunk even in a ``column`` of its own: cut like an over-long
    sentence, each piece under the column's name (the whole column is cut where the name
    leaves less than half the budget)."""
    head = column[: column.rindex("\n")]
    room = budget - count(head)
    if room < budget // 2:
        yield from (unit.text for unit in hard_split(column, 0, budget, count, None))
        return
    for unit in hard_split(value, 0, room, count, None):
        text = f"{head}\n| {unit.text} |"
        yield text if fits_stored(text) and count(text) <= budget else unit.text
