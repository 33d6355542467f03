"""Pictures embedded in DOCX and PPTX files as visual chunks.

PPTX: every picture of a slide (in groups and placeholders too), with its place on the slide as
the box and the slide number as the page. DOCX: every inline picture, in document order; a Word
file has no pages, so the page is 0 (unknown) and the picture is anchored by the text near it
(``office_pictures.docx_pictures``); a caption paragraph right below it is its caption. A
picture's text is what OCR reads in it (``picture_ocr``: within a CPU budget per document, or
what the parser read already). Pictures that cannot or should not be decoded (EMF/WMF drawings,
pictures over the pixel limit) and icons are skipped (``office_pictures``).
"""

from __future__ import annotations

import io

from eagle_rag.ingest.pixelrag.office_pictures import (
    OfficePicture,
    docx_pictures,
    open_picture,
    slide_pictures,
)
from eagle_rag.ingest.pixelrag.picture_ocr import PictureOcr
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual, encode
from eagle_rag.ingest.progress import PageCallback


def pptx_visuals(
    data: bytes,
    *,
    max_per_page: int,
    min_side: float,
    on_page: PageCallback | None = None,
    pictures: PictureOcr | None = None,
) -> list[FoundVisual]:
    """``on_page(done, total)`` hears of each slide as it is done; it may raise to stop.
    ``pictures`` reads the words in the pictures (None: they have no text of their own)."""
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    width, height = float(deck.slide_width or 1), float(deck.slide_height or 1)
    found: list[FoundVisual] = []
    slides = list(deck.slides)
    for number, slide in enumerate(slides, start=1):
        on_slide = 0
        for picture in slide_pictures(slide, number, width, height):
            box = picture.box
            if min(box[2] - box[0], box[3] - box[1]) < min_side or on_slide >= max_per_page:
                continue
            visual = _visual(picture, pictures)
            if visual is not None:
                found.append(visual)
                on_slide += 1
        if on_page is not None:
            on_page(number, len(slides))
    return found


def docx_visuals(
    data: bytes, *, max_pictures: int, pictures: PictureOcr | None = None
) -> list[FoundVisual]:
    from docx import Document

    found: list[FoundVisual] = []
    for picture in docx_pictures(Document(io.BytesIO(data))):
        if len(found) >= max_pictures:
            break
        visual = _visual(picture, pictures)
        if visual is not None:
            found.append(visual)
    return found


def _visual(picture: OfficePicture, pictures: PictureOcr | None) -> FoundVisual | None:
    opened = open_picture(picture.blob)
    if opened is None:
        return None
    text = pictures.text(opened, key=picture.key) if pictures is not None else ""
    image, media, width, height = encode(opened, "image")
    # A Word picture with no paragraph around it (a file that is only a scan) is anchored by
    # its own words: the text chunk that holds them.
    near = picture.near or (text if picture.page == 0 else "")
    return FoundVisual(
        "image", picture.page, picture.box, image, media, width, height, text, picture.caption, near
    )
