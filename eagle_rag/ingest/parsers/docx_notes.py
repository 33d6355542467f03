"""Footnotes and endnotes of a Word file, each placed after the paragraph (or table) that
first refers to it, as ``Footnote N: …``: a note is often the fact behind its sentence (the
source, the date, the exception), so it belongs to that sentence's section, not to a list at
the end. N counts the notes in the order they are first referred to, as Word numbers them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eagle_rag.ingest.parsers.docx_body import W, container_text, outside
from eagle_rag.plugins.payloads import TextSection

_KINDS = ("footnote", "endnote")
_PART_TYPES = {
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes": "footnote",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes": "endnote",
}
_NOT_NOTES = ("separator", "continuationSeparator", "continuationNotice")


class DocxNotes:
    """The notes of one document, numbered as they are first referred to while it is read."""

    def __init__(self, document_part: Any) -> None:
        self._texts = dict(_note_texts(document_part))
        self._numbers: dict[str, int] = dict.fromkeys(_KINDS, 0)
        self._placed: set[tuple[str, str]] = set()

    def after(self, block: Any) -> Iterator[TextSection]:
        """The sections of the notes a paragraph or table refers to for the first time."""
        for kind in _KINDS:
            for reference in block.iter(f"{W}{kind}Reference"):
                key = (kind, reference.get(f"{W}id") or "")
                if key in self._placed or key not in self._texts or not outside(reference, block):
                    continue
                self._placed.add(key)
                self._numbers[kind] += 1
                label = f"{kind.capitalize()} {self._numbers[kind]}"
                yield TextSection(f"{label}: {self._texts[key]}")


def _note_texts(document_part: Any) -> Iterator[tuple[tuple[str, str], str]]:
    from docx.oxml import parse_xml

    for relation in document_part.rels.values():
        kind = _PART_TYPES.get(relation.reltype)
        if kind is None or relation.is_external:
            continue
        part = relation.target_part
        element = getattr(part, "element", None)
        # python-docx has no class for these parts: their XML is parsed from the bytes.
        root = element if element is not None else parse_xml(part.blob)
        for note in root.iter(f"{W}{kind}"):
            text = " ".join(container_text(note).split())
            if note.get(f"{W}type") not in _NOT_NOTES and text:
                yield (kind, note.get(f"{W}id") or ""), text
