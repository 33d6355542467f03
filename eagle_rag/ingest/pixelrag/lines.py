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
    """Lines grouped into rows (boxes that overlap vertically by half a line), top to bottom,
    each row left to right."""
    out: list[list[Line]] = []
    for line in sorted(lines, key=lambda item: (item.bbox[1], item.bbox[0])):
        if out:
            last = out[-1]
            top = max(item.bbox[1] for item in last)
            bottom = min(item.bbox[3] for item in last)
            shared = min(bottom, line.bbox[3]) - max(top, line.bbox[1])
            if shared > 0.5 * min(line.height, bottom - top):
                last.append(line)
                continue
        out.append([line])
    return [sorted(row, key=lambda item: item.bbox[0]) for row in out]
