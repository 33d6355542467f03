"""What visual extraction finds on a page, before it is anchored and stored."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Literal

from PIL import Image

from eagle_rag.ingest.pixelrag.geometry import BBox

VisualKind = Literal["tile", "image", "table"]
# A crop or tile is stored at most this wide/high: enough to read a chart or a table, small
# enough for a chat model's image budget and the object store.
MAX_SIDE = 1600
JPEG_QUALITY = 85
WHOLE_PAGE = (0.0, 0.0, 1.0, 1.0)  # a page tile's box
# A caption line: "Figure 3", "Fig. 2", "Table 1", "Table IV", "Figure S2", "图 1"... — a label
# and its number, so "Table of Contents" (the link atop every page of a filing) is no caption.
CAPTION = re.compile(
    r"^\s*(fig(ure)?\.?|table|chart|graph|diagram|图|表)\s*([a-z]?\d+|[ivxlc]+\b)", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class FoundVisual:
    """A figure, ruled table or page tile: its place (normalised, top-left origin), its
    picture (encoded), and the text that belongs to it (inside the region, and a caption)."""

    kind: VisualKind
    page: int
    bbox: BBox
    image: bytes
    media_type: str
    width: int
    height: int
    text: str = ""
    caption: str = ""
    near: str = ""  # text next to it, for sources without pages (a Word file's paragraph)


def encode(image: Image.Image, kind: VisualKind, turn: int = 0) -> tuple[bytes, str, int, int]:
    """PNG for figures and tables (sharp lines, small), JPEG for page tiles (photos of pages).

    ``turn``: degrees counter-clockwise that make the picture upright (a scan read turned), so
    it is stored as it reads; its box stays on the page as stored."""
    picture = image.convert("RGB")
    if turn:
        picture = picture.rotate(turn, expand=True)
    if max(picture.size) > MAX_SIDE:
        picture.thumbnail((MAX_SIDE, MAX_SIDE))
    buffer = io.BytesIO()
    if kind == "tile":
        picture.save(buffer, format="JPEG", quality=JPEG_QUALITY)
        media = "image/jpeg"
    else:
        picture.save(buffer, format="PNG")
        media = "image/png"
    return buffer.getvalue(), media, picture.width, picture.height


def crop(page: Image.Image, bbox: BBox, pad: float = 0.01) -> Image.Image:
    """The region of a rendered page (a little padding so edges are not cut)."""
    width, height = page.size
    left = max(0, int((bbox[0] - pad) * width))
    top = max(0, int((bbox[1] - pad) * height))
    right = min(width, max(left + 1, int((bbox[2] + pad) * width)))
    bottom = min(height, max(top + 1, int((bbox[3] + pad) * height)))
    return page.crop((left, top, right, bottom))
