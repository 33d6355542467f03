"""The words in the pictures of born-digital documents: a scan pasted into Word, a screenshot on
a slide, a raster chart in a text PDF whose labels are only pixels. Visual extraction reads them
so a picture is found by what it says (its ``content_summary``).

Only pictures with little text of their own (a text layer over them) are read, within a budget
of CPU seconds per document (``cpu_budget``); what the parser already read (an Office file that
is only pictures: ``PICTURE_TEXT_KEY``) is not read again. A picture OCR fails on keeps its own
text: one bad picture costs its words, not the document's visuals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from PIL import Image

from eagle_rag.errors import ModelProviderError
from eagle_rag.ingest.pixelrag.cpu_budget import CpuBudget
from eagle_rag.ingest.pixelrag.engine import OcrPage
from eagle_rag.ingest.pixelrag.reading import PageBlock, page_blocks
from eagle_rag.ingest.pixelrag.visuals_anchors import OWN_TEXT_ENOUGH
from eagle_rag.ingest.pixelrag.visuals_regions import TEXT_CHARS

logger = logging.getLogger(__name__)

# CPU seconds of OCR per document for its pictures' summaries: ~10 to 40 pictures.
PICTURE_OCR_BUDGET_S = 10.0
# A text-born PDF's raster figures have captions and the text around them already; their own
# words are a bonus, bounded tighter so visuals keep within the ingest-cost bar (issue 16:
# visuals on <= 1.3 x text only; a paper's figures took 6 s of OCR under the Office budget).
PDF_PICTURE_OCR_BUDGET_S = 3.0
# Parse metadata: {picture key: its OCR text}, for the pictures the parser read.
PICTURE_TEXT_KEY = "picture_text"

# Reads a picture's lines in about the given CPU seconds (``OcrEngine.words``).
PageReader = Callable[[Image.Image, float], OcrPage]


def blocks_text(blocks: Sequence[PageBlock]) -> str:
    """OCR'd blocks on one line, in reading order, trimmed to what a summary can use."""
    return " ".join(" ".join(b.text.split()) for b in blocks if b.text.strip())[:TEXT_CHARS]


def known_texts(metadata: Mapping[str, object]) -> dict[str, str]:
    """The picture texts a parser recorded in its metadata (``PICTURE_TEXT_KEY``)."""
    found = metadata.get(PICTURE_TEXT_KEY)
    if not isinstance(found, Mapping):
        return {}
    return {str(key): str(text) for key, text in found.items()}


@dataclass(slots=True)
class PictureOcr:
    """One document's picture reader: ``read`` is the OCR engine's (None: OCR is off, only the
    ``known`` texts are used), ``budget`` its CPU seconds for the document."""

    read: PageReader | None
    known: Mapping[str, str] = field(default_factory=dict)
    budget: CpuBudget = field(default_factory=lambda: CpuBudget(PICTURE_OCR_BUDGET_S))

    def text(self, picture: Image.Image, *, own: str = "", key: str = "") -> str:
        """What the picture says: its ``own`` text (a text layer) when that is enough, else what
        the parser or OCR read in it; ``own`` when nothing was read."""
        if len(own) >= OWN_TEXT_ENOUGH:
            return own
        if key in self.known:
            return self.known[key] or own
        read = self.read
        if read is None:
            return own
        seconds = self.budget.remaining_s  # the reader stops there: one picture cannot overrun it
        return self.budget.spend(lambda: _ocr_text(read, picture, seconds), "") or own


def _ocr_text(read: PageReader, picture: Image.Image, seconds: float) -> str:
    try:
        return blocks_text(page_blocks(read(picture, seconds), 1))
    except ModelProviderError as exc:
        logger.warning("no OCR text for a picture: %s", exc)
        return ""
