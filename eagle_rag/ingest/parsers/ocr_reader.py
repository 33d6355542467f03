"""What the parsers that read pixels (PDF pages without a text layer, image files) share."""

from __future__ import annotations

from typing import NamedTuple

from PIL import Image

from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.pixelrag.reading import PageBlock, page_blocks
from eagle_rag.ingest.pixelrag.visuals_regions import RegionVisual, ocr_region_visuals

# Figure/table regions recorded per page for visual extraction (which applies its own bounds).
MAX_RECORDED_REGIONS = 20


class PageReading(NamedTuple):
    blocks: list[PageBlock]
    regions: list[RegionVisual]  # figure and table regions, as boxes on the page as stored
    turn: int  # degrees counter-clockwise that made the page upright (0 for most pages)


class OcrReader:
    """A parser with an OCR engine: one engine is handed to every such parser of an app (its
    models load once); without one, it is created on the first scanned page, so a text-only
    deployment never loads the models."""

    def __init__(self, ocr: OcrEngine | None = None) -> None:
        self._ocr = ocr

    @property
    def ocr(self) -> OcrEngine:
        if self._ocr is None:
            self._ocr = OcrEngine()
        return self._ocr

    def warm(self) -> None:
        """Load the OCR models now (a worker at start), not on the first scanned page."""
        self.ocr.warm()

    def read_page(self, image: Image.Image, number: int) -> PageReading:
        """One page read once: its text blocks, its figure and table regions (cropped later by
        visual extraction, so a scan's figures and tables become visual chunks) and its turn."""
        page = self.ocr.read(image)
        regions = ocr_region_visuals(page, number, max_regions=MAX_RECORDED_REGIONS, picture=image)
        return PageReading(page_blocks(page, number), regions, page.rotation)
