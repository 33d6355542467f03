"""Images (PNG, JPEG, TIFF with its pages, WebP, BMP): OCR'd into sections with boxes.

Each page (a TIFF frame, or the one picture) is turned upright, split into layout regions and
read line by line; titles become headings and headers/footers are dropped, as for scanned PDF
pages. An image in which no text can be read (a blank scan, a photo) is refused with a reason
rather than stored as an empty document.
"""

from __future__ import annotations

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import IMAGE_TYPES
from eagle_rag.ingest.parsers.base import ParseContext, result
from eagle_rag.ingest.parsers.ocr_reader import OcrReader
from eagle_rag.ingest.pixelrag import images
from eagle_rag.ingest.pixelrag.reading import PageBlock, to_sections, with_content
from eagle_rag.ingest.pixelrag.visuals_regions import METADATA_KEY, TURNS_KEY, RegionVisual
from eagle_rag.plugins.payloads import ParseResult


class ImageParser(OcrReader):
    name = "image"
    supported_mime_types: tuple[str, ...] = tuple(sorted(IMAGE_TYPES))

    def parse(self, context: ParseContext) -> ParseResult:
        if not context.ocr:
            raise InvalidInputError(
                "an image is read by OCR, and this ingest pipeline does not OCR (the pixelrag "
                "pipeline does)",
                filename=context.filename,
            )
        read: list[tuple[int, list[PageBlock]]] = []
        regions: list[RegionVisual] = []
        turns: list[list[int]] = []
        total = images.page_count(context.data, context.filename)
        for number, page in enumerate(
            images.pages(context.data, context.filename, max_pages=context.max_pages), start=1
        ):
            reading = self.read_page(page, number)
            read.append((number, reading.blocks))
            regions.extend(reading.regions)
            if reading.turn:
                turns.append([number, reading.turn])
            context.page_done(number, total)
        sections = with_content(to_sections(read))
        if not any(s.content.strip() for s in sections):
            raise InvalidInputError(
                "no text was found in the image (it is blank, or holds no legible text)",
                filename=context.filename,
            )
        return result(
            sections,
            pages=len(read),
            ocr_pages=[n for n, _ in read],
            **{METADATA_KEY: [region.to_dict() for region in regions], TURNS_KEY: turns},
        )
