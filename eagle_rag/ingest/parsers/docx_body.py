"""The text of a Word body read from its XML, where python-docx's ``paragraph.text`` and
``iter_inner_content()`` lose it: content controls (``w:sdt``, around blocks or runs), tracked
insertions (``w:ins``, ``w:moveTo``), text boxes and tables nested in a cell.

Tracked deletions (``w:del``, ``w:moveFrom``) stay dropped: they are not the document's text. A
text box saved by Word is written twice (``mc:Choice`` and its VML ``mc:Fallback``); only the
choice is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
PARAGRAPH, TABLE = f"{W}p", f"{W}tbl"
TEXT_BOX = f"{W}txbxContent"
FALLBACK = f"{MC}Fallback"
_OPENED = {f"{W}sdt": f"{W}sdtContent", f"{W}customXml": None}
# Not the text a reader sees: deletions, moved-away text, properties, field codes, the VML copy
# of a drawing, and text boxes (read as blocks of their own after their paragraph).
_SKIPPED = frozenset(
    {f"{W}del", f"{W}moveFrom", f"{W}pPr", f"{W}rPr", f"{W}instrText", FALLBACK, TEXT_BOX}
)
_ELSEWHERE = frozenset({FALLBACK, TEXT_BOX, f"{W}del", f"{W}moveFrom"})
_CHARACTERS = {f"{W}tab": "\t", f"{W}ptab": "\t", f"{W}cr": "\n", f"{W}noBreakHyphen": "-"}


def blocks(container: Any) -> Iterator[Any]:
    """The paragraphs (``w:p``) and tables (``w:tbl``) of a body, cell, text box or note, in
    order, with those inside content controls in their place."""
    for child in container:
        if child.tag in (PARAGRAPH, TABLE):
            yield child
        elif child.tag in _OPENED:
            inner = _OPENED[child.tag]
            content = child if inner is None else child.find(inner)
            if content is not None:
                yield from blocks(content)


def paragraph_text(paragraph: Any) -> str:
    """What a reader sees of a ``w:p``: its runs, links, fields, insertions and inline
    content controls, without deletions or its text boxes."""
    parts: list[str] = []
    _collect(paragraph, parts)
    return "".join(parts)


def _collect(element: Any, parts: list[str]) -> None:
    for child in element:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIPPED:  # comments and processing instructions
            continue
        if tag == f"{W}t":
            parts.append(child.text or "")
        elif tag == f"{W}br":
            parts.append("" if child.get(f"{W}type") in ("page", "column") else "\n")
        elif tag in _CHARACTERS:
            parts.append(_CHARACTERS[tag])
        else:
            _collect(child, parts)


def text_boxes(paragraph: Any) -> Iterator[Any]:
    """The ``w:txbxContent`` anchored in a paragraph, once each: not the VML fallback copy, nor
    a box inside another box (read with its box)."""
    return (box for box in paragraph.iter(TEXT_BOX) if outside(box, paragraph))


def outside(element: Any, block: Any) -> bool:
    """Whether an element of a paragraph or table is its own, not in one of its text boxes
    (read as blocks of their own), a fallback copy, or a tracked deletion."""
    outer = element.getparent()
    while outer is not None and outer is not block:
        if outer.tag in _ELSEWHERE:
            return False
        outer = outer.getparent()
    return True


def container_text(container: Any) -> str:
    """All the text of a cell or text box, one line per paragraph; a nested table is one line,
    its rows parted by `` / `` and their cells by ``; `` (a Markdown cell holds no table)."""
    lines: list[str] = []
    for block in blocks(container):
        if block.tag == TABLE:
            lines.append(" / ".join(row for row in _table_lines(block) if row))
            continue
        lines.append(paragraph_text(block))
        lines.extend(container_text(box) for box in text_boxes(block))
    return "\n".join(line for line in lines if line.strip())


def _table_lines(table: Any) -> Iterator[str]:
    for row in table.iter(f"{W}tr"):
        if _nearest_table(row) is table:
            cells = [container_text(cell) for cell in row.iter(f"{W}tc") if _in_row(cell, row)]
            yield "; ".join(" ".join(c.split()) for c in cells if c.strip())


def _nearest_table(element: Any) -> Any:
    outer = element.getparent()
    while outer is not None and outer.tag != TABLE:
        outer = outer.getparent()
    return outer


def _in_row(cell: Any, row: Any) -> bool:
    outer = cell.getparent()
    while outer is not None and outer.tag != f"{W}tr":
        outer = outer.getparent()
    return outer is row
