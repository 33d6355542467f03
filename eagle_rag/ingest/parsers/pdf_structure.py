"""Text-layer lines → paragraphs and, for a PDF without an outline, headings.

A heading is a short line set apart by its font: clearly larger than the body text, or bold at
body size on a line of its own, or numbered ("2.3 Results", "第二章", "Chapter 4") and larger or
bold. Levels follow numbering depth where there is one, else font size (largest = 1). A
document where such lines are not rare has no typographic headings (a slide deck in one big
font, a form): then only clearly larger lines count. Text in a ruled table's cells is never a
heading (a table's bold header row is the table's), nor is a bold row of cells set far apart.
Rare is by lines or by characters: a short guide has nearly as many heading lines as body
lines, but little heading text. Running heads, feet and page numbers are dropped first
(``pdf_margins``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from eagle_rag.ingest.parsers.pdf_margins import without_running_lines
from eagle_rag.ingest.parsers.pdf_text import TextLine
from eagle_rag.ingest.pixelrag.geometry import BBox, unrotate
from eagle_rag.ingest.pixelrag.lines import Line, join
from eagle_rag.plugins.payloads import TextSection

MAX_HEADING_CHARS = 100
MAX_HEADING_WORDS = 14
LARGER = 1.2  # a heading's font is at least this much larger than the body's ...
MUCH_LARGER = 1.4  # ... or this much, where headings by weight or numbering are too common
MAX_HEADING_SHARE = 0.3  # of the lines, or of the characters
MAX_LEVEL = 4
PARAGRAPH_GAP = 0.8  # a vertical gap over this many line heights starts a paragraph
_NUMBERED = re.compile(
    r"^(?:(?P<dotted>\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+\S"
    r"|(?:chapter|section|part|appendix|article)\s+[\dIVXLC]+\b"
    r"|第[一二三四五六七八九十百\d]+[章节部分篇条]"
    r"|[IVX]{1,4}\.\s+\S"
    r"|[一二三四五六七八九十]+、)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[,;:，；：]$")


@dataclass(frozen=True, slots=True)
class PageLines:
    page: int
    lines: tuple[TextLine, ...]


def body_size(pages: Sequence[PageLines]) -> float:
    """The font size most characters are set in."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            sizes[round(line.size * 2) / 2] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def sections(pages: Sequence[PageLines], *, detect_headings: bool) -> list[TextSection]:
    # Paragraphs, heads and feet are found on the page as its text stands; boxes go out as
    # shown.
    pages = without_running_lines(_upright(pages))
    body = body_size(pages)
    marks = _headings(pages, body) if detect_headings else {}
    levels = _levels(marks)
    out: list[TextSection] = []
    for page in pages:
        paragraph: list[TextLine] = []
        for index, line in enumerate(page.lines):
            if (page.page, index) in marks:
                out.extend(_paragraph(paragraph, page.page))
                paragraph = []
                text, boxes = join([Line(line.text, _shown(line), page.page)])
                level = levels[(page.page, index)]
                if out and _continues_heading(out[-1], level, page.page):
                    previous = out.pop()
                    text = f"{previous.heading} {text}"
                    boxes = previous.boxes + boxes
                out.append(TextSection("", heading=text, level=level, page=page.page, boxes=boxes))
                continue
            if paragraph and _breaks(paragraph[-1], line, body):
                out.extend(_paragraph(paragraph, page.page))
                paragraph = []
            paragraph.append(line)
        out.extend(_paragraph(paragraph, page.page))
    return out


def _upright(pages: Sequence[PageLines]) -> list[PageLines]:
    """The pages with each line's box on the page turned the way its text stands (a /Rotate 90
    page's lines are columns as shown: every one a paragraph, every one in the head band)."""
    return [
        replace(
            page,
            lines=tuple(_turned_upright(line) for line in page.lines),
        )
        if any(line.turn for line in page.lines)
        else page
        for page in pages
    ]


def _turned_upright(line: TextLine) -> TextLine:
    return replace(line, bbox=unrotate(line.bbox, -line.turn))


def _shown(line: TextLine) -> BBox:
    """An upright line's box back on the page as shown."""
    return unrotate(line.bbox, line.turn) if line.turn else line.bbox


def _continues_heading(previous: TextSection, level: int, page: int) -> bool:
    """A heading wrapped onto a second line is one heading."""
    return bool(previous.heading) and previous.level == level and previous.page == page


def _paragraph(lines: list[TextLine], page: int) -> list[TextSection]:
    if not lines:
        return []
    text, boxes = join([Line(line.text, _shown(line), page) for line in lines])
    return [TextSection(text, page=page, boxes=boxes)] if text.strip() else []


def _breaks(previous: TextLine, line: TextLine, body: float) -> bool:
    height = max(previous.height, line.height, 1e-6)
    gap = line.bbox[1] - previous.bbox[3]
    if gap > PARAGRAPH_GAP * height or gap < -2 * height:  # a gap, or a jump to the next column
        return True
    larger, smaller = max(previous.size, line.size), min(previous.size, line.size)
    return smaller > 0 and larger / smaller > 1.15 and larger > body


def _candidate(line: TextLine, body: float, alone: bool, strict: bool) -> bool:
    if line.in_table:  # a bold header row is the table's, not a section's
        return False
    text = line.text.strip()
    words = text.split()
    if not 2 <= len(text) <= MAX_HEADING_CHARS or len(words) > MAX_HEADING_WORDS:
        return False
    if text.replace(".", "").isdigit() or _SENTENCE_END.search(text) or not _has_letters(text):
        return False
    if body <= 0:
        return False
    ratio = line.size / body
    if strict:
        return ratio >= MUCH_LARGER
    if ratio >= LARGER:
        return True
    numbered = bool(_NUMBERED.match(text))
    if numbered and (line.bold or ratio >= 1.05) and alone:
        return True
    return line.bold and ratio >= 0.95 and alone and not text.endswith(".")


def _has_letters(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def _headings(pages: Sequence[PageLines], body: float) -> dict[tuple[int, int], TextLine]:
    lines = [line for page in pages for line in page.lines]
    for strict in (False, True):
        marks = {
            (page.page, index): line
            for page in pages
            for index, line in enumerate(page.lines)
            if _candidate(line, body, _alone(page.lines, index, body), strict)
        }
        if _rare(list(marks.values()), lines):
            return marks
    return {}


def _rare(marks: Sequence[TextLine], lines: Sequence[TextLine]) -> bool:
    """Few enough to be headings: at most a share of the lines, or of the text. A short guide
    (a title and three numbered headings over one paragraph each) has more heading lines than
    that share, but far less heading text; a form of bold labels has both."""
    if len(marks) <= max(3, MAX_HEADING_SHARE * len(lines)):
        return True
    text = sum(len(line.text) for line in lines)
    return sum(len(line.text) for line in marks) <= MAX_HEADING_SHARE * text


def _alone(lines: Sequence[TextLine], index: int, body: float) -> bool:
    """Not the first or a middle line of a body paragraph: a heading stands on its own."""
    line = lines[index]
    following = lines[index + 1] if index + 1 < len(lines) else None
    if following is None or _breaks(line, following, body):
        return True
    # A bold run-in line directly above body text of another weight is still a heading.
    return line.bold and not following.bold


def _levels(marks: dict[tuple[int, int], TextLine]) -> dict[tuple[int, int], int]:
    """Unnumbered headings: by font size (largest = 1). Numbered ones: by depth ("2.3" is one
    below "2"), starting at the size rank of the largest numbered heading, so a title set
    above them stays their parent."""
    sizes = sorted({round(line.size) for line in marks.values()}, reverse=True)
    depths = {key: _depth(line.text) for key, line in marks.items()}
    numbered = [sizes.index(round(marks[k].size)) + 1 for k, d in depths.items() if d]
    base = min(numbered, default=1)
    levels = {}
    for key, line in marks.items():
        depth = depths[key]
        level = base + depth - 1 if depth else sizes.index(round(line.size)) + 1
        levels[key] = min(level, MAX_LEVEL)
    return levels


def _depth(text: str) -> int:
    """1 for "2 Methods" or "Chapter 2", 2 for "2.1 Data", ...; 0 when not numbered."""
    match = _NUMBERED.match(text.strip())
    if not match:
        return 0
    dotted = match.group("dotted")
    return dotted.count(".") + 1 if dotted else 1
