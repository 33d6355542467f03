"""An OCR'd page → blocks in reading order: titles become headings, running heads go.

Lines are assigned to the layout region that holds their centre; lines outside every region
form blocks of their own by vertical proximity. Reading order follows columns: between two
full-width blocks, the left column is read top to bottom before the right one. Header and
footer regions become margin blocks; :func:`to_sections` drops those that are running heads or
page numbers across the document (see ``margins``) and keeps the rest as text; so do text blocks
wholly in the top or bottom band of a page, which the layout model does not always label.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from eagle_rag.ingest.pixelrag.engine import OcrPage, Region
from eagle_rag.ingest.pixelrag.geometry import BBox, center, union, unrotate
from eagle_rag.ingest.pixelrag.lines import Line, join, rows
from eagle_rag.ingest.pixelrag.margins import MARGIN, is_page_number, is_running, running_margins
from eagle_rag.plugins.payloads import PageBox, SectionKind, TextSection

MARGIN_REGIONS = frozenset({"header", "footer"})
# The share of the page height at its top and at its bottom where running heads are set (as
# for a text layer's, parsers/pdf_margins).
MARGIN_BAND = 0.09
# A title region holding more than this is a misread paragraph, not a heading.
MAX_HEADING_CHARS = 80
# A body-text block whose lines are this much taller than the page's median body line is a
# heading the layout model missed (headings are set 1.4-2x body size; a bold lead-in or a
# skewed line's box is within ~1.15x); judged only on a page with this many body lines.
HEADING_SIZE = 1.3
MIN_BODY_LINES = 3
SENTENCE_ENDS = (".", ",", ";", ":", "。", "，", "；")
# Blocks wider than this share of the page span both columns.
FULL_WIDTH = 0.55
# A line belongs to a region its centre is within this share of the page of. On a page much
# taller (or wider) than paper, a share of its height would span lines: the pad along its long
# side is kept to what it is on a page of 1.5:1 (a 12-screen scroll: 1% of its height is three
# lines, and a title region took the paragraph's first line).
REGION_PAD = 0.01
PAD_ASPECT = 1.5
# Two stray lines belong to one block when the gap between them is under this many line heights.
LINE_GAP = 0.9
# Two lines are set the same size when one's box is at most this much taller (a bold lead-in,
# a line without descenders); a title is 1.4-2x body size, a running head smaller than body.
SAME_SIZE = 1.15


@dataclass(frozen=True, slots=True)
class PageBlock:
    """A paragraph, heading or table of one page, with its line boxes."""

    kind: str  # "heading" | "text" | "table" | "margin"
    text: str
    boxes: tuple[PageBox, ...]
    line_height: float
    bbox: BBox


def page_blocks(page: OcrPage, number: int) -> list[PageBlock]:
    """The page's blocks in reading order; boxes mapped back onto the page as stored."""
    groups: dict[int, list[Line]] = {}
    stray: list[Line] = []
    for ocr_line in page.lines:
        line = Line(ocr_line.text, ocr_line.bbox, number)
        index = _region_of(line.bbox, page.regions, _pads(page.width, page.height))
        if index is None:
            stray.append(line)
        else:
            groups.setdefault(index, []).append(line)
    band = MARGIN_BAND * min(1.0, PAD_ASPECT * page.width / page.height) if page.height else 0.0
    built = _region_blocks(groups, page.regions, band)
    built += [("text", _block("text", members)) for members in _stray_groups(stray, band)]
    blocks = _headings_by_size(built)
    blocks = [_as_margin(b) if _in_margin_band(b, band) else b for b in blocks]
    ordered = reading_order([b for b in blocks if b.text.strip()])
    if page.rotation:
        ordered = [_unrotated(b, page.rotation) for b in ordered]
    return ordered


def _region_blocks(
    groups: dict[int, list[Line]], regions: Sequence[Region], band: float
) -> list[tuple[str, PageBlock]]:
    """Each region's block, the region's kind beside it. A region's lines in the top or bottom
    band set another size than the line next to them (a running head the model put in one
    region with the title below it) are a text block of their own."""
    built: list[tuple[str, PageBlock]] = []
    for index, members in groups.items():
        kind = regions[index].kind
        parts = [members] if kind == "table" else _band_parts(members, band)
        for part in parts:
            part_kind = "text" if len(parts) > 1 and _band_side(part[0], band) else kind
            built.append((part_kind, _block(part_kind, part)))
    return built


def _band_parts(lines: list[Line], band: float) -> list[list[Line]]:
    parts: list[list[Line]] = []
    for line in (line for row in rows(lines) for line in row):
        if parts and _joins(parts[-1][-1], line, band):
            parts[-1].append(line)
        else:
            parts.append([line])
    return parts


def _headings_by_size(built: list[tuple[str, PageBlock]]) -> list[PageBlock]:
    """The layout model often calls a plain scan's headings text. A block of body text (a
    ``text`` region's, or lines no region claimed) that is one or two short lines, set clearly
    larger than the page's body text and not ending like a sentence, is a heading."""
    body = sorted(
        block.line_height
        for region, block in built
        if region == "text" and block.kind == "text"
        for _ in block.boxes
    )
    if len(body) < MIN_BODY_LINES:
        return [block for _, block in built]
    size = HEADING_SIZE * body[len(body) // 2]
    return [
        _as_heading(block) if region == "text" and _looks_like_heading(block, size) else block
        for region, block in built
    ]


def _looks_like_heading(block: PageBlock, size: float) -> bool:
    text = block.text.strip()
    return (
        block.kind == "text"
        and block.line_height >= size
        and len(block.boxes) <= 2
        and len(text) <= MAX_HEADING_CHARS
        and not text.endswith(SENTENCE_ENDS)
        and any(c.isalpha() for c in text)
    )


def _as_heading(block: PageBlock) -> PageBlock:
    return PageBlock("heading", block.text, block.boxes, block.line_height, block.bbox)


def _in_margin_band(block: PageBlock, band: float) -> bool:
    """A short text block wholly in the top or bottom ``band``, where running heads, feet and
    page numbers are set: the layout model often labels them only on some pages ("header" on
    page 1, "text" on page 2), or not at all. Such a block is kept as text unless it runs. On
    a page much taller than paper the band is what it would be on paper (a 12-screen scroll's
    9% is a screen of body text)."""
    top, bottom = block.bbox[1], block.bbox[3]
    short = len(block.text) <= MAX_HEADING_CHARS
    return block.kind == "text" and short and (bottom <= band or top >= 1 - band)


def _as_margin(block: PageBlock) -> PageBlock:
    return PageBlock(MARGIN, block.text, block.boxes, block.line_height, block.bbox)


def _pads(width: int, height: int) -> tuple[float, float]:
    """REGION_PAD along each axis, normalised (the same on a page within 1.5:1)."""
    if width <= 0 or height <= 0:
        return REGION_PAD, REGION_PAD
    return (
        REGION_PAD * min(1.0, PAD_ASPECT * height / width),
        REGION_PAD * min(1.0, PAD_ASPECT * width / height),
    )


def _region_of(
    box: BBox, regions: Sequence[Region], pads: tuple[float, float] = (REGION_PAD, REGION_PAD)
) -> int | None:
    """The region holding the line's centre, the most confident of several; a figure region
    only where no other holds it (the model draws figure regions over paragraphs it also
    calls text, and a more confident one took a paragraph's middle lines)."""
    x, y = center(box)
    pad_x, pad_y = pads
    best: int | None = None
    for index, region in enumerate(regions):
        x0, y0, x1, y1 = region.bbox
        inside = x0 - pad_x <= x <= x1 + pad_x and y0 - pad_y <= y <= y1 + pad_y
        if inside and (best is None or _rank(region) > _rank(regions[best])):
            best = index
    return best


def _rank(region: Region) -> tuple[bool, float]:
    return region.kind != "figure", region.score


def _block(kind: str, members: list[Line]) -> PageBlock:
    grouped = rows(members)
    ordered = [line for row in grouped for line in row]
    heights = [line.height for line in ordered]
    if kind == "table":
        # A table keeps its rows on lines of their own, cells separated by " | ".
        text, boxes = _table_text(grouped)
        block_kind = "table"
    else:
        text, boxes = join(ordered)
        block_kind = _text_kind(kind, text)
    return PageBlock(
        block_kind,
        text,
        boxes,
        statistics.median(heights) if heights else 0.0,
        union(line.bbox for line in ordered),
    )


def _text_kind(region: str, text: str) -> str:
    if region in MARGIN_REGIONS:
        return MARGIN
    return "heading" if region == "title" and len(text) <= MAX_HEADING_CHARS else "text"


def _table_text(grouped: list[list[Line]]) -> tuple[str, tuple[PageBox, ...]]:
    text, boxes = "", list[PageBox]()
    for row in grouped:
        if text:
            text += "\n"
        row_text, row_boxes = join(row, separator=" | ")
        boxes.extend(
            PageBox(b.page, b.bbox, (b.start or 0) + len(text), (b.end or 0) + len(text))
            for b in row_boxes
        )
        text += row_text
    return text, tuple(boxes)


def _stray_groups(lines: list[Line], band: float = 0.0) -> list[list[Line]]:
    """Lines no region claimed, grouped into paragraphs by vertical gap and horizontal overlap.
    A line wholly in the top or bottom ``band`` joins a line out of it only when set the same
    size: a running head set close above a page's title is a block of its own, judged as one."""
    groups: list[list[Line]] = []
    for row in rows(lines):
        for line in row:
            target = next(
                (g for g in reversed(groups) if _continues(g[-1], line, band)),
                None,
            )
            if target is None:
                groups.append([line])
            else:
                target.append(line)
    return groups


def _continues(previous: Line, line: Line, band: float = 0.0) -> bool:
    gap = line.bbox[1] - previous.bbox[3]
    shared = min(previous.bbox[2], line.bbox[2]) - max(previous.bbox[0], line.bbox[0])
    near = -previous.height < gap < LINE_GAP * max(previous.height, line.height) and shared > 0
    return near and _joins(previous, line, band)


def _joins(previous: Line, line: Line, band: float) -> bool:
    """Lines on both sides of a band's edge are one block only when set the same size."""
    return _band_side(previous, band) == _band_side(line, band) or _same_size(previous, line)


def _band_side(line: Line, band: float) -> int:
    """-1 for a line wholly in the top band, 1 in the bottom band, 0 elsewhere."""
    if line.bbox[3] <= band:
        return -1
    return 1 if line.bbox[1] >= 1 - band else 0


def _same_size(a: Line, b: Line) -> bool:
    low, high = sorted((a.height, b.height))
    return high <= SAME_SIZE * low


def reading_order(blocks: list[PageBlock]) -> list[PageBlock]:
    """Top to bottom; between full-width blocks, column by column (left first)."""
    out: list[PageBlock] = []
    band: list[PageBlock] = []
    for block in sorted(blocks, key=lambda b: (b.bbox[1], b.bbox[0])):
        if block.bbox[2] - block.bbox[0] >= FULL_WIDTH:
            out.extend(_columns(band))
            band = []
            out.append(block)
        else:
            band.append(block)
    out.extend(_columns(band))
    return out


def _columns(band: list[PageBlock]) -> list[PageBlock]:
    left = [b for b in band if center(b.bbox)[0] < 0.5]
    right = [b for b in band if center(b.bbox)[0] >= 0.5]
    return sorted(left, key=lambda b: b.bbox[1]) + sorted(right, key=lambda b: b.bbox[1])


def _unrotated(block: PageBlock, rotation: int) -> PageBlock:
    boxes = tuple(PageBox(b.page, unrotate(b.bbox, rotation), b.start, b.end) for b in block.boxes)
    return PageBlock(
        block.kind, block.text, boxes, block.line_height, unrotate(block.bbox, rotation)
    )


def _without_running(
    pages: Sequence[tuple[int, Sequence[PageBlock]]],
) -> list[tuple[int, Sequence[PageBlock]]]:
    """The pages without their running heads and page numbers. Pages of a few lines set high
    (a notice scanned twice) lie wholly in the band, their repeated lines all "running": when
    nothing at all would be left, the pages keep their text (as parsers/pdf_margins does)."""
    margins = [(n, [b.text for b in blocks if b.kind == MARGIN]) for n, blocks in pages]
    running = running_margins(margins)
    kept: list[tuple[int, Sequence[PageBlock]]] = [
        (n, [b for b in blocks if not (b.kind == MARGIN and is_running(n, b.text, running))])
        for n, blocks in pages
    ]
    if any(blocks for _, blocks in kept):
        return kept
    return [(n, [b for b in blocks if not is_page_number(b.text)]) for n, blocks in pages]


def to_sections(pages: Sequence[tuple[int, Sequence[PageBlock]]]) -> list[TextSection]:
    """Blocks of every page → sections. Heading levels follow title size across the document:
    titles within 85% of the tallest are level 1, the rest level 2. Running heads and page
    numbers are dropped; other margin blocks are text."""
    heights = [b.line_height for _, blocks in pages for b in blocks if b.kind == "heading"]
    tallest = max(heights, default=0.0)
    sections = []
    for number, blocks in _without_running(pages):
        for block in blocks:
            if block.kind == "heading":
                level = 1 if block.line_height >= 0.85 * tallest else 2
                sections.append(
                    TextSection("", heading=block.text, level=level, page=number, boxes=block.boxes)
                )
            else:
                kind: SectionKind = "table" if block.kind == "table" else "text"
                sections.append(TextSection(block.text, page=number, kind=kind, boxes=block.boxes))
    return sections


def with_content(sections: list[TextSection]) -> list[TextSection]:
    """Headings only (a poster, a cover page): they are the text, or nothing would be indexed."""
    if any(s.content.strip() for s in sections):
        return sections
    return [
        TextSection(s.heading or "", page=s.page, boxes=s.boxes) if s.heading else s
        for s in sections
    ]
