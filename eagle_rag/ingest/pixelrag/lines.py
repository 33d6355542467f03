"""Join positioned lines into paragraph text, keeping each line's box and its character span."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from eagle_rag.ingest.pixelrag.geometry import BBox
from eagle_rag.plugins.payloads import PageBox

_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True, slots=True)
class Line:
    """A line of text on a page, its normalised box (on the page as stored) and size."""

    text: str
    bbox: BBox
    page: int

    @property
    def height(self) -> float:
        return self.bbox[3] - self.bbox[1]


def joiner(left: str, right: str) -> str:
    """What goes between two lines: nothing inside CJK text or after a hyphenated word."""
    if not left or not right:
        return ""
    if _CJK.match(left[-1]) or _CJK.match(right[0]):
        return ""
    return " "


def join(lines: Sequence[Line], *, separator: str | None = None) -> tuple[str, tuple[PageBox, ...]]:
    """The lines as one text (``separator`` between them, else a space where words need one),
    and one box per line covering its span of that text."""
    text = ""
    boxes = []
    for line in lines:
        piece = line.text.strip()
        if not piece:
            continue
        if text:
            if separator is not None:
                text += separator
            elif text.endswith("-") and len(text) > 1 and text[-2].isalpha() and piece[0].islower():
                text = text[:-1]  # a word hyphenated at the line end
            else:
                text += joiner(text, piece)
        start = len(text)
        text += piece
        boxes.append(PageBox(line.page, line.bbox, start, len(text)))
    return text, tuple(boxes)


def rows(lines: Sequence[Line]) -> list[list[Line]]:
    """Lines grouped into rows (boxes that overlap vertically by half a line and sit side by
    side), top to bottom, each row left to right."""
    out: list[list[Line]] = []
    for line in sorted(lines, key=lambda item: (item.bbox[1], item.bbox[0])):
        if out and _same_row(out[-1], line):
            out[-1].append(line)
        else:
            out.append([line])
    return [sorted(row, key=lambda item: item.bbox[0]) for row in out]


def _same_row(row: Sequence[Line], line: Line) -> bool:
    """On a slightly rotated scan a long line's box is taller than its text, so the short end
    of the next line ("wards.") overlaps it vertically; pieces of one row never overlap
    horizontally, which tells the two apart."""
    top = max(item.bbox[1] for item in row)
    bottom = min(item.bbox[3] for item in row)
    shared = min(bottom, line.bbox[3]) - max(top, line.bbox[1])
    if shared <= 0.5 * min(line.height, bottom - top):
        return False
    return all(_side_by_side(item.bbox, line.bbox) for item in row)


def _side_by_side(a: BBox, b: BBox) -> bool:
    """Boxes whose horizontal overlap is under a tenth of the narrower one (OCR boxes of
    neighbouring words or cells touch, or overlap by a pixel or two)."""
    shared = min(a[2], b[2]) - max(a[0], b[0])
    return shared < 0.1 * min(a[2] - a[0], b[2] - b[0])
