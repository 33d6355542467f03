"""Pictures embedded in DOCX and PPTX files as visual chunks.

PPTX: every picture of a slide (in groups and placeholders too), with its place on the slide as
the box and the slide number as the page. DOCX: every inline picture, in document order; a Word
file has no pages, so the page is 0 (unknown) and the picture is anchored by the paragraph
around it. Pictures PIL cannot open (EMF/WMF drawings) and icons are skipped.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from PIL import Image

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual, encode

MIN_PIXELS = 64  # a picture smaller than this on either side is an icon or a bullet
BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"


def pptx_visuals(data: bytes, *, max_per_page: int, min_side: float) -> list[FoundVisual]:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    width, height = float(deck.slide_width or 1), float(deck.slide_height or 1)
    found: list[FoundVisual] = []
    for number, slide in enumerate(deck.slides, start=1):
        on_slide = 0
        for shape in _pictures(slide.shapes):
            box = clamp(
                (
                    shape.left / width,
                    shape.top / height,
                    (shape.left + shape.width) / width,
                    (shape.top + shape.height) / height,
                )
            )
            if min(box[2] - box[0], box[3] - box[1]) < min_side or on_slide >= max_per_page:
                continue
            visual = _visual(shape.image.blob, number, box, near="")
            if visual is not None:
                found.append(visual)
                on_slide += 1
    return found


def docx_visuals(data: bytes, *, max_pictures: int) -> list[FoundVisual]:
    from docx import Document

    document = Document(io.BytesIO(data))
    found: list[FoundVisual] = []
    previous = ""
    for paragraph in document.paragraphs:
        text = " ".join(paragraph.text.split())
        for blip in paragraph._p.iter(BLIP):  # python-docx has no public API for this
            part = document.part.related_parts.get(blip.get(EMBED) or "")
            blob = getattr(part, "blob", None)
            visual = _visual(blob, 0, (0.0, 0.0, 1.0, 1.0), near=text or previous) if blob else None
            if visual is not None and len(found) < max_pictures:
                found.append(visual)
        previous = text or previous
    return found


def _pictures(shapes: Any) -> Iterator[Any]:
    """Picture shapes, in groups too. A picture inserted into a layout's picture (or content)
    placeholder is a PlaceholderPicture, shape type 14 rather than 13: a Picture all the same."""
    from pptx.shapes.group import GroupShape
    from pptx.shapes.picture import Picture

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _pictures(shape.shapes)
        elif isinstance(shape, Picture):
            yield shape


def _visual(blob: bytes, page: int, box: BBox, *, near: str) -> FoundVisual | None:
    try:
        with Image.open(io.BytesIO(blob)) as opened:
            opened.load()
            picture = opened.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    if min(picture.size) < MIN_PIXELS:
        return None
    image, media, width, height = encode(picture, "image")
    return FoundVisual("image", page, box, image, media, width, height, near=near)
