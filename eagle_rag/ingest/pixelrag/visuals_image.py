"""Visuals of an image document (PNG, JPEG, TIFF frames, WebP, BMP): one page tile per frame,
and a crop for each figure and table region the parser's layout pass found on it.

The OCR text of each page (from the parse) is the tile's text, so a photographed chart or slide
is found by the words on it and comes back as the picture itself; a region's text is what OCR
read inside it (visuals_regions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eagle_rag.ingest.pixelrag import images
from eagle_rag.ingest.pixelrag.visuals_found import WHOLE_PAGE, FoundVisual, crop, encode
from eagle_rag.ingest.pixelrag.visuals_regions import RegionVisual
from eagle_rag.ingest.progress import PageCallback


def image_visuals(
    data: bytes,
    filename: str,
    page_text: Mapping[int, str],
    *,
    max_pages: int,
    regions: Mapping[int, Sequence[RegionVisual]] | None = None,
    min_side: float = 0.0,
    max_per_page: int = 8,
    on_page: PageCallback | None = None,
    turns: Mapping[int, int] | None = None,
) -> list[FoundVisual]:
    """``on_page(done, total)`` hears of each frame as it is done; it may raise to stop.
    ``turns``: the frames OCR read turned upright, by number (their pictures are stored so)."""
    found = []
    total = images.page_count(data, filename)
    for number, frame in enumerate(images.pages(data, filename, max_pages=max_pages), start=1):
        turn = (turns or {}).get(number, 0)
        kept = [
            r
            for r in (regions or {}).get(number, ())
            if min(r.bbox[2] - r.bbox[0], r.bbox[3] - r.bbox[1]) >= min_side
        ]
        for region in kept[:max_per_page]:
            image, media, width, height = encode(crop(frame, region.bbox), region.kind, turn)
            found.append(
                FoundVisual(
                    region.kind, number, region.bbox, image, media, width, height,
                    region.text, region.caption,
                )
            )  # fmt: skip
        image, media, width, height = encode(frame, "tile", turn)
        text = page_text.get(number, "")
        found.append(FoundVisual("tile", number, WHOLE_PAGE, image, media, width, height, text))
        if on_page is not None:
            on_page(number, total)
    return found
