"""The marks of a Word list item as Word shows them: ``1.``, ``a)``, ``2.1``, or ``-`` for a
bullet, indented two spaces per nesting level.

Word numbers an item from the document's numbering definitions: the paragraph's (or its
style's) ``w:numPr`` names a list (``numId``) and a level (``ilvl``); the list's abstract
definition gives each level's format (``numFmt``), start and text (``lvlText``, "%1.%2."). Items
of one list are counted through the whole document, a level's count restarting under each item
of a level above it, as Word does. Formats other than decimal, letters and roman numerals (Chinese
counting, ordinals, ...) are counted in decimal. A list style that only links to another
(``numStyleLink``) is shown as a bullet.
"""

from __future__ import annotations

import re
from typing import Any

from eagle_rag.ingest.parsers.docx_body import W

_BULLETS = ("bullet", "none", "")
# Word's list levels are 0-8; a file may claim any number (ilvl="50000000" made a 100 MB mark).
MAX_LEVEL = 8
# A start beyond this is a hostile or broken file: numbers are counted from 1 (roman numerals of
# a huge start were built one symbol at a time).
MAX_START = 100_000
_LEVEL_IN_NAME = re.compile(r"^list.*\s(\d)$", re.IGNORECASE)  # "List Bullet 2"
_ROMAN = (
    (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
    (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
)  # fmt: skip


class DocxLists:
    """The numbering of one document's list items, counted as they are read in order."""

    def __init__(self, document_part: Any) -> None:
        try:
            self._numbering = document_part.numbering_part.element
        except (KeyError, NotImplementedError):  # a document without numbering definitions
            self._numbering = None
        self._counts: dict[str, list[int]] = {}

    def mark(self, paragraph: Any) -> str | None:
        """The item's mark with its indent (``"  1. "``), or None where it is no list item."""
        found = _numbering_properties(paragraph)
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if found is None:
            return "- " if style.lower().startswith("list") else None
        list_id, level = found
        named = _LEVEL_IN_NAME.match(style.strip())
        indent = "  " * min(max(level, int(named.group(1)) - 1 if named else 0), MAX_LEVEL)
        return indent + self._count(list_id, level) + " "

    def number(self, paragraph: Any) -> str | None:
        """A numbered heading's number as Word shows it (``2.1``, ``Chapter 3``), or None where
        it has none. Counted in the same pass as list items, so the numbers follow on."""
        found = _numbering_properties(paragraph)
        if found is None:
            return None
        shown = self._count(*found)
        return None if shown == "-" else shown

    def _count(self, list_id: str, level: int) -> str:
        levels = self._levels(list_id)
        current = levels.get(level, ("bullet", "", 1))
        if current[0] in _BULLETS:
            return "-"
        counts = self._counts.setdefault(list_id, [])
        counts[:] = counts[: level + 1] + [0] * (level + 1 - len(counts))
        counts[level] += 1
        text = current[1] or f"%{level + 1}."

        def number(match: re.Match[str]) -> str:
            shown = int(match.group(1)) - 1
            fmt, _, start = levels.get(shown, ("decimal", "", 1))
            count = counts[shown] if shown < len(counts) else 1
            return _formatted(max(count, 1) + start - 1, fmt)

        return re.sub(r"%(\d)", number, text)

    def _levels(self, list_id: str) -> dict[int, tuple[str, str, int]]:
        """Each level's format, text and start in the list's abstract definition."""
        if self._numbering is None:
            return {}
        num = self._numbering.find(f"{W}num[@{W}numId='{list_id}']")
        abstract_id = _value(num.find(f"{W}abstractNumId")) if num is not None else None
        abstract = self._numbering.find(f"{W}abstractNum[@{W}abstractNumId='{abstract_id}']")
        if abstract is None:
            return {}
        levels: dict[int, tuple[str, str, int]] = {}
        for lvl in abstract.findall(f"{W}lvl"):
            start = _value(lvl.find(f"{W}start")) or "1"
            fmt = _value(lvl.find(f"{W}numFmt")) or "decimal"
            level_text = _value(lvl.find(f"{W}lvlText")) or ""
            index = _value(lvl, "ilvl") or "0"
            if index.isdigit() and int(index) <= MAX_LEVEL:
                first = int(start) if start.isdigit() and int(start) <= MAX_START else 1
                levels[int(index)] = (fmt, level_text, first)
        return levels


def _numbering_properties(paragraph: Any) -> tuple[str, int] | None:
    """The paragraph's list and level: each from its own ``w:numPr``, else its style's (and
    the styles it is based on)."""
    found: dict[str, str] = {}
    holders = [paragraph._p.pPr]
    style = paragraph.style
    while style is not None and len(holders) < 16:
        holders.append(style.element.pPr)
        style = style.base_style
    for properties in holders:
        numbering = properties.find(f"{W}numPr") if properties is not None else None
        if numbering is None:
            continue
        for name in ("numId", "ilvl"):
            value = _value(numbering.find(f"{W}{name}"))
            if value is not None:
                found.setdefault(name, value)
    list_id, level = found.get("numId", "0"), found.get("ilvl", "0")
    # numId 0 takes away the numbering a style would give.
    depth = min(int(level), MAX_LEVEL) if level.isdigit() else 0
    return None if list_id == "0" else (list_id, depth)


def _value(element: Any, name: str = "val") -> str | None:
    return element.get(f"{W}{name}") if element is not None else None


def _formatted(count: int, fmt: str) -> str:
    if fmt in ("lowerLetter", "upperLetter"):
        letter = chr(ord("a") + (count - 1) % 26) * ((count - 1) // 26 + 1)
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman"):
        roman = ""
        for value, symbols in _ROMAN:
            while count >= value:
                roman, count = roman + symbols, count - value
        return roman.upper() if fmt == "upperRoman" else roman
    return str(count)
