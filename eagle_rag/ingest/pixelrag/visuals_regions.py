"""Figures and tables from rapid-layout regions (``figure``, ``table`` and their captions).

A scanned page or a photographed one has no embedded images and no drawn paths: its figures
and tables are only pixels, and the layout model is what finds them. The parser already ran it
on every OCR'd page, so it records each page's figure and table regions here (with the OCR
text inside them and the text of the caption region next to them) and visual extraction crops
them from the page picture. On a text-born page whose drawn chart PDFium cannot see as one
object, extraction runs the layout model itself and reads the text layer inside the regions.

Bounded: a region smaller than ``min_side`` of the page's side (a logo, a stamp) or covering
nearly the whole page (the page is the picture: its tile has it) is skipped, and so are
regions of empty paper (speckles the model saw a figure in) and figure regions that are a
paragraph the model also called text; at most ``max_regions`` are kept per page, the most
confident first. A caption goes to one region only.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from eagle_rag.ingest.pixelrag.engine import OcrPage, Region
from eagle_rag.ingest.pixelrag.geometry import (
    BBox,
    area,
    center,
    clamp,
    contains,
    overlap,
    unrotate,
)
from eagle_rag.ingest.pixelrag.lines import Line, join, rows
from eagle_rag.ingest.pixelrag.visuals_found import CAPTION, VisualKind

VISUAL_REGIONS: Mapping[str, VisualKind] = {"figure": "image", "table": "table"}
CAPTIONS = {"figure": "figure_caption", "table": "table_caption"}
# A region over this share of the page is the page itself (a slide photo, a full-page chart).
PAGE_SIZED = 0.8
# A caption region belongs to the figure whose edge is at most this far (of the page height).
CAPTION_GAP = 0.06
# A caption on the side captions are not usually printed (above a figure, below a table) fits
# as one this much further away (of the page height): a chart and an empty region the model
# saw below it both touched "Figure 3: ...", printed under the chart.
OTHER_SIDE = 0.02
# A caption printed inside a region is a line in this strip (of the page height) at its top or
# bottom.
INSIDE_STRIP = 0.02
# A figure region this much covered by a text region is that paragraph when the text region is
# the more confident, or when text lines cover TEXT_LINES of it (a paragraph's lines cover
# 60-85% of it, a chart's labels under 15%).
TEXT_COVERED = 0.5
TEXT_LINES = 0.4
# A region with less than this share of ink (on 4x4-pixel cells: INK_CELL) is empty paper; a
# cell is ink when its grey differs from the paper's by more than INK_CONTRAST.
MIN_INK = 0.005
INK_CELL = 4
INK_CONTRAST = 32
TEXT_CHARS = 1200  # what a summary can use; the region's full text is in the text chunks
METADATA_KEY = "layout_regions"
# Parse metadata: [[page, degrees], ...] for each OCR'd page that was read turned upright, so
# its tile and crops are stored upright too (an image model, a chat model or a reader shown a
# sideways page reads it as badly as OCR would have).
TURNS_KEY = "ocr_turns"


@dataclass(frozen=True, slots=True)
class RegionVisual:
    """A figure or table region of one page (box on the page as stored, top-left origin)."""

    page: int
    kind: VisualKind
    bbox: BBox
    text: str = ""
    caption: str = ""
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "kind": self.kind,
            "bbox": [round(v, 4) for v in self.bbox],
            "text": self.text,
            "caption": self.caption,
            "score": round(self.score, 4),
        }


def region_visuals(
    regions: Sequence[Region],
    text_in: Callable[[BBox], str],
    page: int,
    *,
    min_side: float,
    max_regions: int,
    ink: Callable[[BBox], float] | None = None,
    lines: Callable[[BBox], float] | None = None,
) -> list[RegionVisual]:
    """The figure and table regions worth a visual, with their text and caption. Where the
    model saw one thing twice (a chart as figure and as table), the more confident wins.
    ``ink``: the share of a box that is not paper (None: not judged); a region with less is
    empty paper the model saw a figure in. ``lines``: the share of a box that text lines cover
    (None: not judged); a figure region under a text region and mostly lines is a paragraph."""
    kept: list[Region] = []
    for region in sorted(regions, key=lambda r: -r.score):
        wanted = (
            region.kind in VISUAL_REGIONS
            and _sized(region.bbox, min_side)
            and not _paragraph(region, regions, lines)
            and (ink is None or ink(region.bbox) >= MIN_INK)
        )
        if wanted and not any(_same_place(region.bbox, other.bbox) for other in kept):
            kept.append(region)
    kept = kept[:max_regions]
    captions = _captions(kept, regions, text_in)
    found = []
    for region, caption in zip(kept, captions, strict=True):
        text = text_in(region.bbox)[:TEXT_CHARS]
        kind = VISUAL_REGIONS[region.kind]
        found.append(RegionVisual(page, kind, region.bbox, text, caption, region.score))
    return sorted(found, key=lambda v: (v.bbox[1], v.bbox[0]))


def ocr_region_visuals(
    ocr: OcrPage,
    page: int,
    *,
    min_side: float = 0.0,
    max_regions: int = 100,
    picture: Image.Image | None = None,
) -> list[RegionVisual]:
    """Figure and table regions of an OCR'd page, their text what OCR read inside them; boxes
    mapped back onto the page as stored (OCR read it turned upright). ``picture``: the page as
    stored, to leave out regions of empty paper (None: not judged)."""

    def text_in(box: BBox) -> str:
        inside = [
            Line(line.text, line.bbox, page)
            for line in ocr.lines
            if contains(box, center(line.bbox), 0.005)
        ]
        return join([line for row in rows(inside) for line in row])[0]

    def lines(box: BBox) -> float:
        return sum(overlap(line.bbox, box) for line in ocr.lines) / max(area(box), 1e-9)

    ink = None if picture is None else ink_share(picture, ocr.rotation)
    found = region_visuals(
        ocr.regions, text_in, page, min_side=min_side, max_regions=max_regions, ink=ink, lines=lines
    )
    if not ocr.rotation:
        return found
    return [
        RegionVisual(v.page, v.kind, unrotate(v.bbox, ocr.rotation), v.text, v.caption, v.score)
        for v in found
    ]


def ink_share(picture: Image.Image, rotation: int = 0) -> Callable[[BBox], float]:
    """The share of a box (on the page read turned ``rotation``) that differs from the paper.
    Judged on 4x4-pixel cells, so that a scan's lone speckles (one dark pixel in a cell) are
    paper and a hairline (a row of them) is ink; the paper is the page's median grey."""
    cells = picture.convert("L").reduce(INK_CELL)
    paper = int(statistics.median(cells.resize((64, 64)).tobytes()))
    marked = cells.point(lambda v: 255 if abs(v - paper) > INK_CONTRAST else 0)

    def share(box: BBox) -> float:
        x0, y0, x1, y1 = unrotate(box, rotation)
        w, h = marked.size
        left, top = int(x0 * w), int(y0 * h)
        crop = marked.crop((left, top, max(left + 1, int(x1 * w)), max(top + 1, int(y1 * h))))
        histogram = crop.histogram()
        return histogram[255] / max(1, sum(histogram))

    return share


def from_metadata(metadata: Mapping[str, Any]) -> dict[int, list[RegionVisual]]:
    """The parser's recorded regions by page (a malformed entry is skipped, not fatal)."""
    by_page: dict[int, list[RegionVisual]] = {}
    for item in metadata.get(METADATA_KEY) or ():
        try:
            kind = str(item["kind"])
            if kind not in VISUAL_REGIONS.values():
                continue
            visual = RegionVisual(
                int(item["page"]),
                "table" if kind == "table" else "image",
                clamp([float(v) for v in item["bbox"]]),
                str(item.get("text") or ""),
                str(item.get("caption") or ""),
                float(item.get("score") or 0.0),
            )
        except (KeyError, TypeError, ValueError):
            continue
        by_page.setdefault(visual.page, []).append(visual)
    return by_page


def turns_from_metadata(metadata: Mapping[str, Any]) -> dict[int, int]:
    """The parser's recorded page turns (a malformed entry is skipped, not fatal)."""
    turns: dict[int, int] = {}
    for item in metadata.get(TURNS_KEY) or ():
        try:
            page, degrees = int(item[0]), int(item[1])
        except (IndexError, KeyError, TypeError, ValueError):
            continue
        if degrees % 90 == 0 and degrees % 360:
            turns[page] = degrees % 360
    return turns


def _same_place(a: BBox, b: BBox) -> bool:
    return overlap(a, b) > 0.5 * min(area(a), area(b))


def _sized(box: BBox, min_side: float) -> bool:
    return min(box[2] - box[0], box[3] - box[1]) >= min_side and area(box) <= PAGE_SIZED


def _paragraph(
    region: Region, regions: Sequence[Region], lines: Callable[[BBox], float] | None
) -> bool:
    """A figure region mostly under a text region, which is the more confident or whose box
    is mostly text lines, is a paragraph the model saw twice (labelled text and figure)."""
    if region.kind != "figure":
        return False
    under = [
        other
        for other in regions
        if other.kind == "text"
        and overlap(other.bbox, region.bbox) > TEXT_COVERED * area(region.bbox)
    ]
    return any(other.score > region.score for other in under) or bool(
        under and lines is not None and lines(region.bbox) >= TEXT_LINES
    )


@dataclass(frozen=True, slots=True)
class _Claim:
    """A region's caption and how well it fits: the lower ``rank``, the better."""

    text: str
    rank: float


def _captions(
    kept: Sequence[Region], regions: Sequence[Region], text_in: Callable[[BBox], str]
) -> list[str]:
    """Each region's caption. A caption two regions reach (a chart, and an empty region the
    model saw below it) goes to the one it fits best; the other gets none. Captions are told
    apart by their text, whichever way a region found one (a caption region, a line in a band
    or inside it): "Figure 3: ..." names one figure."""
    claims = [_caption(region, regions, text_in) for region in kept]
    winners: dict[str, tuple[float, int]] = {}
    for index, claim in enumerate(claims):
        if claim is not None and (claim.text not in winners or claim.rank < winners[claim.text][0]):
            winners[claim.text] = (claim.rank, index)
    return [
        claim.text if claim is not None and winners[claim.text][1] == index else ""
        for index, claim in enumerate(claims)
    ]


def _caption(
    region: Region, regions: Sequence[Region], text_in: Callable[[BBox], str]
) -> _Claim | None:
    """A "Table 2 ..." line printed at the region's top or bottom, inside it (the model often
    draws a table's region over its caption); else the nearest caption region of the matching
    kind just above or below; else a "Figure 2: ..." line in the band just below or above (the
    model often calls a caption a plain text or reference region)."""
    x0, y0, x1, y1 = region.bbox
    for strip in (
        (x0, y0, x1, min(y1, y0 + INSIDE_STRIP)),
        (x0, max(y0, y1 - INSIDE_STRIP), x1, y1),
    ):
        text = " ".join(text_in(strip).split())
        if CAPTION.match(text):
            return _Claim(text, 0.0)
    wanted = CAPTIONS[region.kind]
    best: tuple[float, int] | None = None
    for index, other in enumerate(regions):
        shared = min(other.bbox[2], x1) - max(other.bbox[0], x0)
        gap = max(other.bbox[1] - y1, y0 - other.bbox[3])
        if other.kind == wanted and shared > 0 and gap <= CAPTION_GAP:
            below = other.bbox[1] + other.bbox[3] > y0 + y1  # its centre below the region's
            rank = gap + _side_penalty(region, below=below)
            best = best if best is not None and best[0] <= rank else (rank, index)
    if best is not None:
        return _Claim(" ".join(text_in(regions[best[1]].bbox).split()), best[0])
    for band, below in (
        ((0.0, y1, 1.0, min(1.0, y1 + CAPTION_GAP)), True),
        ((0.0, max(0.0, y0 - CAPTION_GAP), 1.0, y0), False),
    ):
        text = " ".join(text_in(band).split())
        if CAPTION.match(text):
            return _Claim(text, CAPTION_GAP / 2 + _side_penalty(region, below=below))
    return None


def _side_penalty(region: Region, *, below: bool) -> float:
    """Captions are printed below figures and above tables: one on the other side fits less."""
    usual = below if region.kind == "figure" else not below
    return 0.0 if usual else OTHER_SIDE
