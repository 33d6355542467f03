"""What the parsers that read pixels (PDF pages without a text layer, image files) share."""

from __future__ import annotations

from eagle_rag.ingest.pixelrag.engine import OcrEngine


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
