"""Rendering a PDF page to pixels under one size cap, for OCR and for visual extraction alike.

A poster-sized page (a 175 by 124 inch plan) at 150 dpi is 656 megapixels, about 2 GB as RGB:
both passes render it at the largest scale that stays under MAX_RENDER_PIXELS instead.
"""

from __future__ import annotations

import math

import pypdfium2 as pdfium
from PIL import Image

# A rendered page is capped at this many pixels (a poster-sized page at 150 dpi).
MAX_RENDER_PIXELS = 40_000_000


def render_scale(
    width: float, height: float, dpi: float, max_pixels: int = MAX_RENDER_PIXELS
) -> float:
    """PDFium's scale for a ``width`` by ``height`` point page at ``dpi``, lowered to stay
    within ``max_pixels``."""
    scale = dpi / 72
    area = width * height
    if area <= 0 or area * scale * scale <= max_pixels:
        return scale
    # PDFium rounds each side up, so solve (w·s + 1)(h·s + 1) = cap: never over the cap.
    perimeter = width + height
    root = math.sqrt(perimeter * perimeter + 4 * area * (max_pixels - 1))
    return (root - perimeter) / (2 * area)


def render(page: pdfium.PdfPage, dpi: float) -> Image.Image:
    """The page at ``dpi``, or smaller when that would be over the pixel cap."""
    width, height = page.get_size()
    image: Image.Image = page.render(scale=render_scale(width, height, dpi)).to_pil()
    return image
