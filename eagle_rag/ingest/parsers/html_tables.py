"""An HTML ``<table>`` as a grid of cell texts: spans expanded, its caption kept.

A cell spanning rows or columns fills every slot it covers (with its text), so the cells after
it stay under their own column. Rows and cells are the table's own: a table nested in a cell
is read once, as text inside that cell.
"""

from __future__ import annotations

from collections.abc import Iterator

from bs4 import Tag

from eagle_rag.ingest.parsers.base import markdown_table
from eagle_rag.plugins.payloads import TextSection

# HTML caps colspan at 1000; rowspan is capped by the rows the table has.
MAX_COLSPAN = 1000
# Characters of spanning cells' text a table may repeat: 160 KB of <td colspan=1000>x</td> rows
# made 20 MB of table to embed, and one long cell spanning 10,000 empty rows would make more.
MAX_SPAN_COPY_CHARS = 1_000_000
_Cell = tuple[str, int, int]  # text, columns, rows (0: to the table's end)


def table_sections(table: Tag) -> list[TextSection]:
    """The caption (a line of text before the table) and the table, when they hold text."""
    sections: list[TextSection] = []
    caption = table.find("caption", recursive=False)
    if isinstance(caption, Tag):
        text = caption.get_text(" ", strip=True)
        if text:
            sections.append(TextSection(text))
    rows = [row for row in table_grid(table) if any(row)]
    if rows:
        sections.append(TextSection(markdown_table(rows), kind="table"))
    return sections


def table_grid(table: Tag) -> list[list[str]]:
    """Each row's cell texts by column, a spanning cell's text in every slot it covers."""
    rows = [[_cell(cell) for cell in _own_cells(row)] for row in _own_rows(table)]
    # No cell spans more columns than the table's widest row has cells.
    width = max((len(cells) for cells in rows), default=1)
    copies = _SpanCopies(MAX_SPAN_COPY_CHARS)
    grid: list[list[str]] = []
    below: dict[int, tuple[str, int]] = {}  # column -> text, rows it covers after this one
    for index, cells in enumerate(rows):
        covered = {column: text for column, (text, _) in below.items()}
        below = {column: (text, left - 1) for column, (text, left) in below.items() if left > 1}
        line: list[str] = []
        for text, columns, span in cells:
            while len(line) in covered:
                line.append(copies.of(covered[len(line)]))
            rows_left = len(rows) - index
            span = rows_left if span == 0 else min(span, rows_left)
            for column in range(min(columns, width)):
                if span > 1:
                    below[len(line)] = (text, span - 1)
                line.append(text if column == 0 else copies.of(text))
        while covered and len(line) <= max(covered):
            line.append(copies.of(covered.get(len(line), "")))
        grid.append(line)
    return grid


class _SpanCopies:
    """The characters of spanning cells' text a table may repeat; past them a span's other
    slots are empty (its text stays once, in its first slot)."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def of(self, text: str) -> str:
        self.left -= len(text)
        return text if self.left >= 0 else ""


def _own_rows(table: Tag) -> Iterator[Tag]:
    for child in table.find_all(True, recursive=False):
        if child.name == "tr":
            yield child
        elif child.name in ("thead", "tbody", "tfoot"):
            yield from child.find_all("tr", recursive=False)


def _own_cells(row: Tag) -> list[Tag]:
    return row.find_all(("th", "td"), recursive=False)


def _cell(cell: Tag) -> _Cell:
    text = cell.get_text(" ", strip=True)
    return text, max(1, min(_span(cell, "colspan", 1), MAX_COLSPAN)), _span(cell, "rowspan", 1)


def _span(cell: Tag, name: str, default: int) -> int:
    """The attribute as a count; a value that is not a non-negative number is the default."""
    value = cell.get(name)
    try:
        number = int(str(value).strip()) if value is not None else default
    except ValueError:
        return default
    return number if number >= 0 else default
