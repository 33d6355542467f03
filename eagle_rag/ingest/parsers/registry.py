"""The built-in Parser components and choosing one by MIME type."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.parsers.base import Parser
from eagle_rag.ingest.parsers.html import HtmlParser
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.office import DocxParser, PptxParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.parsers.sheets import CsvParser, XlsxParser
from eagle_rag.ingest.parsers.text import JsonParser, MarkdownParser, PlainTextParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine


def builtin_parsers() -> list[Parser]:
    """One of each; the PDF and image parsers share one OCR engine (its models load once, on
    the first page that needs them)."""
    ocr = OcrEngine()
    return [
        PlainTextParser(),
        MarkdownParser(),
        JsonParser(),
        HtmlParser(),
        PdfParser(ocr),
        ImageParser(ocr),
        DocxParser(),
        PptxParser(),
        XlsxParser(),
        CsvParser(),
    ]


def parser_for(mime_type: str, parsers: Iterable[Any]) -> Parser:
    """The last registered parser that declares ``mime_type``: plugins load after Core, so a
    plugin's parser for a type overrides Core's."""
    matches = [p for p in parsers if mime_type in getattr(p, "supported_mime_types", ())]
    if not matches:
        raise InvalidInputError(f"no parser handles {mime_type}", mime_type=mime_type)
    chosen: Parser = matches[-1]
    return chosen
