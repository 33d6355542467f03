"""The built-in Parser components and choosing one by MIME type."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import TEXT_TYPES
from eagle_rag.ingest.parsers.base import Parser
from eagle_rag.ingest.parsers.html import HtmlParser
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.office import DocxParser, PptxParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.parsers.sheets import CsvParser, XlsxParser
from eagle_rag.ingest.parsers.text import JsonParser, MarkdownParser, PlainTextParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine

logger = logging.getLogger(__name__)


def builtin_parsers(ocr: OcrEngine | None = None) -> list[Parser]:
    """One of each; the PDF, image and Office parsers share one OCR engine (its models load once, at
    :func:`warm_in_background` or on the first page that needs them)."""
    ocr = ocr or OcrEngine()
    return [
        PlainTextParser(),
        MarkdownParser(),
        JsonParser(),
        HtmlParser(),
        PdfParser(ocr),
        ImageParser(ocr),
        DocxParser(ocr),
        PptxParser(ocr),
        XlsxParser(),
        CsvParser(),
    ]


def warm_in_background(parsers: Iterable[Any]) -> threading.Thread:
    """Warm every parser that has a ``warm()`` (the OCR models: loaded and run once) in a
    daemon thread, so a worker's first scanned page pays no model load and start-up does not
    wait for it. A failure is logged: the first page will load the models (and say why not)."""

    def warm_all() -> None:
        for parser in parsers:
            warm = getattr(parser, "warm", None)
            if not callable(warm):
                continue
            name, started = getattr(parser, "name", parser), time.monotonic()
            try:
                warm()
            except Exception:
                logger.exception("could not warm the %s parser", name)
            else:
                logger.info("warmed the %s parser in %.1f s", name, time.monotonic() - started)

    thread = threading.Thread(target=warm_all, name="eagle-parser-warm", daemon=True)
    thread.start()
    return thread


def parser_for(
    mime_type: str,
    parsers: Iterable[Any],
    *,
    filename: str | None = None,
    data: bytes | None = None,
) -> Parser:
    """The parser for a file: the last registered one that claims it, else the last that
    declares ``mime_type`` (plugins load after Core, so a plugin's parser overrides Core's).

    A parser may define ``claims(filename, data) -> bool`` to take text files that share a
    generic MIME type (``.yml``, ``.sql``, ``.lkml`` are all ``text/plain``) by their name and
    content; it is asked only for text types, so a claim never turns a PDF into YAML.
    """
    candidates = list(parsers)
    if filename is not None and data is not None and mime_type in TEXT_TYPES:
        claiming = [p for p in candidates if _claims(p, filename, data)]
        if claiming:
            claimed: Parser = claiming[-1]
            return claimed
    matches = [p for p in candidates if mime_type in getattr(p, "supported_mime_types", ())]
    if not matches:
        raise InvalidInputError(f"no parser handles {mime_type}", mime_type=mime_type)
    chosen: Parser = matches[-1]
    return chosen


def _claims(parser: Any, filename: str, data: bytes) -> bool:
    claims = getattr(parser, "claims", None)
    return bool(claims(filename, data)) if callable(claims) else False
