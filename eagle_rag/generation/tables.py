"""Tables in a source's text, row by row, for the extractive answer.

The parsers write a table as Markdown pipe rows (``| SX-5000 | 5.0 kW | 17 kg |``, a cell's
own ``|`` escaped as ``\\|``), and a scanned page's table as lines of cells separated by
`` | ``. Read as prose, a table is one long "sentence" with no full stop: asked the weight of
one model, the answer quoted the whole table. Read here, each data row is a sentence of its own
that names its columns ("Model: SX-5000; Power: 5.0 kW; Weight: 17 kg"), so the row the
question names is quoted, and only it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r":?-+:?")
MIN_ROWS = 2  # a header and one row; a lone line with a "|" in it is prose


@dataclass(frozen=True, slots=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def row_sentences(self) -> list[str]:
        """Each data row with its column names: ``Header: value; …`` (an empty value left out,
        a value under an empty header alone)."""
        if not self.rows:  # a header alone is a line of text
            return ["; ".join(c for c in self.header if c)] if any(self.header) else []
        sentences = []
        for row in self.rows:
            parts = [
                f"{name}: {value}" if name else value
                for name, value in zip_longest(self.header, row, fillvalue="")
                if value
            ]
            if parts:
                sentences.append("; ".join(parts))
        return sentences


def split_tables(block: str) -> Iterator[tuple[str, Table | None]]:
    """The block's runs in order: prose as ``(text, None)``, each table as ``("", table)``."""
    prose: list[str] = []
    rows: list[str] = []

    def flush_rows() -> Iterator[tuple[str, Table | None]]:
        if len(rows) >= MIN_ROWS:
            if prose:
                yield "\n".join(prose), None
                prose.clear()
            yield "", _table(rows)
        else:
            prose.extend(rows)
        rows.clear()

    for line in block.split("\n"):
        if _is_row(line):
            rows.append(line)
            continue
        yield from flush_rows()
        prose.append(line)
    yield from flush_rows()
    if prose:
        yield "\n".join(prose), None


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") or " | " in stripped


def _table(lines: list[str]) -> Table:
    cells = [_cells(line) for line in lines]
    cells = [row for row in cells if not all(_SEPARATOR_CELL.fullmatch(c) for c in row if c)]
    if not cells:
        return Table((), ())
    return Table(tuple(cells[0]), tuple(tuple(row) for row in cells[1:]))


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    stripped = stripped.removeprefix("|")
    if stripped.endswith("|") and not stripped.endswith("\\|"):
        stripped = stripped[:-1]
    return [" ".join(c.replace("\\|", "|").split()) for c in _CELL_SPLIT.split(stripped)]
