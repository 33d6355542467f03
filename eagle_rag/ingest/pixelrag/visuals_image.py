"""Visuals of an image document (PNG, JPEG, TIFF frames, WebP, BMP): one page tile per frame.

The OCR text of each page (from the parse) is the tile's text, so a photographed chart or slide
is found by the words on it and comes back as the picture itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from eagle_rag.ingest.pixelrag import images
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual, encode

WHOLE_PAGE = (0.0, 0.0, 1.0, 1.0)


def image_visuals(
    data: bytes, filename: str, page_text: Mapping[int, str], *, max_pages: int
) -> list[FoundVisual]:
    found = []
    for number, frame in enumerate(images.pages(data, filename, max_pages=max_pages), start=1):
        image, media, width, height = encode(frame, "tile")
        text = page_text.get(number, "")
        found.append(FoundVisual("tile", number, WHOLE_PAGE, image, media, width, height, text))
    return found
