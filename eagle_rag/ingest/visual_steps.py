"""Core's visual-extract step (INGEST_VISUAL_EXTRACT): find, store and anchor a document's
visuals off the event loop.

A document whose pictures cannot be read (a damaged image stream, an odd PDF) keeps its text:
extraction failures are logged and give no visuals. A failing object store is not hidden: it
fails the document, and the pipeline deletes what this attempt stored. A cancel stops the
extraction between pages: the page callback's error is not a damaged picture, it is passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from eagle_rag.ingest.cancel import IngestCancelledError
from eagle_rag.ingest.pixelrag.picture_ocr import PageReader
from eagle_rag.ingest.pixelrag.visuals import extract_visuals, store_visuals
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual
from eagle_rag.ingest.pixelrag.visuals_pdf import LayoutModel, PdfVisualOptions
from eagle_rag.ingest.progress import PageCallback
from eagle_rag.models.core_budget import CoreBudget
from eagle_rag.plugins.payloads import DocumentSource, ParseResult, TextChunk, VisualChunk
from eagle_rag.settings import IngestSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Models:
    layout: LayoutModel | None
    ocr: PageReader | None


def visual_options(settings: IngestSettings) -> PdfVisualOptions:
    return PdfVisualOptions(
        tiles=settings.visual_page_tiles,
        tables=settings.visual_tables,
        min_side=settings.visual_min_side,
        max_per_page=settings.visual_max_per_page,
        max_pages=settings.max_pages,
    )


async def extract_and_store(
    objects: object,
    namespace: str,
    source: DocumentSource,
    data: bytes,
    parsed: ParseResult,
    chunks: tuple[TextChunk, ...],
    settings: IngestSettings,
    layout: LayoutModel | None = None,
    on_page: PageCallback | None = None,
    ocr: PageReader | None = None,
    cores: CoreBudget | None = None,
) -> tuple[VisualChunk, ...]:
    """``layout``: the layout model for text-born pages with drawn charts (off when None or
    when ``ingest.visual_layout`` is false); ``on_page`` hears of pages and may stop it;
    ``ocr``: the OCR reader for pictures' words (off when None or ``ingest.visual_ocr`` is
    false); ``cores``: the embedder's budget, of which the extraction reserves one core while
    it runs beside the text's embedding (its model calls run on it)."""
    model = layout if settings.visual_layout else None
    reader = ocr if settings.visual_ocr else None
    options = visual_options(settings)
    models = _Models(model, reader)
    find = functools.partial(_found, source, data, parsed, options, models, on_page)
    found = await asyncio.to_thread(_reserved, cores, find)
    if not found:
        return ()
    stored = await asyncio.to_thread(store_visuals, objects, namespace, source, found, chunks)
    return tuple(s.chunk for s in stored)


def _reserved(cores: CoreBudget | None, find: Callable[[], list[FoundVisual]]) -> list[FoundVisual]:
    """``find()`` on a core reserved from ``cores`` (when there is a budget)."""
    with cores.reserve(1) if cores is not None else contextlib.nullcontext():
        return find()


def _found(
    source: DocumentSource,
    data: bytes,
    parsed: ParseResult,
    options: PdfVisualOptions,
    models: _Models,
    on_page: PageCallback | None,
) -> list[FoundVisual]:
    try:
        return extract_visuals(
            source, data, parsed, options, models.layout, on_page, ocr=models.ocr
        )
    except IngestCancelledError:  # the task was cancelled: stop the attempt, not just visuals
        raise
    except Exception as exc:  # pdfium / PIL raise their own types for damaged streams
        logger.warning("no visuals for %s: %s: %s", source.filename, type(exc).__name__, exc)
        return []
