"""The pictures inside Word and PowerPoint files: found in document order, opened safely.

A picture is opened only once its header has been read: one that declares more pixels than
``images.MAX_PIXELS`` (a decompression bomb, or a 600 dpi poster pasted into a memo) is skipped
before any pixel is decoded, with a logged reason; so are formats PIL cannot read (EMF/WMF
drawings) and icons. The document itself still ingests.
"""

from __future__ import annotations

import hashlib
import io
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from PIL import Image

from eagle_rag.ingest.parsers.docx_body import PARAGRAPH, blocks, paragraph_text
from eagle_rag.ingest.parsers.docx_styles import heading_level
from eagle_rag.ingest.pixelrag import images
from eagle_rag.ingest.pixelrag.geometry import BBox, clamp
from eagle_rag.ingest.pixelrag.visuals_found import CAPTION

logger = logging.getLogger(__name__)

MIN_PIXELS = 64  # a picture smaller than this on either side is an icon or a bullet
BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
WHOLE = (0.0, 0.0, 1.0, 1.0)


@dataclass(frozen=True, slots=True)
class OfficePicture:
    """A picture's bytes and where it sits: ``page`` is the slide (0 in a Word file, which has
    no pages), ``box`` its place on the slide, ``near`` the Word text it is found by."""

    blob: bytes
    page: int
    box: BBox = WHOLE
    near: str = ""
    caption: str = ""  # a Word picture's caption paragraph

    @property
    def key(self) -> str:
        """The same picture's key wherever it is found (the parser's OCR is reused by it)."""
        return hashlib.sha1(self.blob, usedforsecurity=False).hexdigest()


def docx_pictures(document: Any) -> Iterator[OfficePicture]:
    """Every inline picture of a python-docx Document's body paragraphs (content controls
    included), with the text it is found by: the paragraph around it, else its caption (a
    Caption-style or "Figure 2: ..." paragraph right below it), else the paragraph before it in
    its section, else the one after it. A heading is none of these: its words are a section's
    path, not text a chunk holds, so a picture right below one was anchored nowhere."""
    from docx.text.paragraph import Paragraph

    paragraphs = [
        Paragraph(block, document._body)
        for block in blocks(document.element.body)
        if block.tag == PARAGRAPH
    ]
    texts = ["" if _is_heading(p) else " ".join(paragraph_text(p._p).split()) for p in paragraphs]
    previous = ""
    for index, paragraph in enumerate(paragraphs):
        following = texts[index + 1] if index + 1 < len(texts) else ""
        caption = following if following and _is_caption(paragraphs[index + 1], following) else ""
        for blip in paragraph._p.iter(BLIP):  # python-docx has no public API for this
            part = document.part.related_parts.get(blip.get(EMBED) or "")
            blob = getattr(part, "blob", None)
            if blob:
                near = texts[index] or caption or previous or following
                yield OfficePicture(blob, 0, near=near, caption=caption)
        # A heading starts a section: the paragraph before it is another section's.
        previous = "" if _is_heading(paragraph) else texts[index] or previous


def _is_heading(paragraph: Any) -> bool:
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    return style.lower() == "title" or heading_level(paragraph) is not None


def _is_caption(paragraph: Any, text: str) -> bool:
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    return style.lower() == "caption" or bool(CAPTION.match(text))


def slide_pictures(slide: Any, number: int, width: float, height: float) -> Iterator[OfficePicture]:
    """Every picture of a python-pptx slide (in groups and placeholders too), with its box on
    a ``width`` by ``height`` slide."""
    for shape in _pictures(slide.shapes):
        box = clamp(
            (
                shape.left / width,
                shape.top / height,
                (shape.left + shape.width) / width,
                (shape.top + shape.height) / height,
            )
        )
        yield OfficePicture(shape.image.blob, number, box)


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


def open_picture(blob: bytes, *, max_pixels: int = images.MAX_PIXELS) -> Image.Image | None:
    """The picture as 8-bit RGB on white, or None (with the reason logged) when it cannot or
    should not be decoded: the pixel count is checked on the header, before decoding."""
    try:
        with warnings.catch_warnings():  # the limit is ours, checked below
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(blob))
        with opened:
            width, height = opened.size
            if width * height > max_pixels:
                logger.warning(
                    "skipped a %dx%d picture: over the limit of %d pixels",
                    width,
                    height,
                    max_pixels,
                )
                return None
            if min(width, height) < MIN_PIXELS:
                return None
            opened.load()
            return images.to_rgb(opened)
    except (*images.DECODE_ERRORS, Image.DecompressionBombError) as exc:
        logger.info("skipped a picture that cannot be read: %s: %s", type(exc).__name__, exc)
        return None
