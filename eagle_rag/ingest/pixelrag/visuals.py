"""PixelRAG visual chunks: find a document's figures, tables and page tiles, anchor them to its
text chunks, and store their pictures in the object store (keys under the document's prefix,
so deleting the document deletes them).

``extract_visuals`` is pure (bytes in, visuals out); ``store_visuals`` writes the pictures and
returns the VisualChunks whose rows go to ``eagle_visual``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, replace

from eagle_rag.ingest.pixelrag.cpu_budget import CpuBudget
from eagle_rag.ingest.pixelrag.picture_ocr import (
    PDF_PICTURE_OCR_BUDGET_S,
    PICTURE_OCR_BUDGET_S,
    PageReader,
    PictureOcr,
    known_texts,
)
from eagle_rag.ingest.pixelrag.visuals_anchors import anchors
from eagle_rag.ingest.pixelrag.visuals_found import FoundVisual
from eagle_rag.ingest.pixelrag.visuals_image import image_visuals
from eagle_rag.ingest.pixelrag.visuals_office import docx_visuals, pptx_visuals
from eagle_rag.ingest.pixelrag.visuals_pdf import LayoutModel, PdfVisualOptions, pdf_visuals
from eagle_rag.ingest.pixelrag.visuals_regions import from_metadata, turns_from_metadata
from eagle_rag.ingest.progress import PageCallback
from eagle_rag.plugins.payloads import DocumentSource, ParseResult, TextChunk, VisualChunk
from eagle_rag.storage.keys import object_key, validate_prefix

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
VISUALS_PART = "visuals"
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg"}


@dataclass(frozen=True, slots=True)
class StoredVisual:
    """A visual chunk and the picture bytes it points at (kept for an image encoder)."""

    chunk: VisualChunk
    image: bytes


def extract_visuals(
    source: DocumentSource,
    data: bytes,
    parsed: ParseResult,
    options: PdfVisualOptions,
    layout: LayoutModel | None = None,
    on_page: PageCallback | None = None,
    ocr: PageReader | None = None,
) -> list[FoundVisual]:
    """Figures, tables and tiles of a PDF, image or Office document; [] for other formats.

    ``layout``: the layout model, for text-born PDF pages with drawn charts (None: skipped).
    ``ocr``: the OCR engine's reader, for the words in raster figures and Office pictures that
    have little text of their own (None: only what the parser read is used).
    ``on_page`` hears of the pages (a PDF's, an image's frames, a deck's slides) as they are
    done, and may raise to stop; a Word file has no pages to report."""
    ocr_pages = frozenset(int(p) for p in parsed.metadata.get("ocr_pages", ()) or ())
    regions = from_metadata(parsed.metadata)  # figures and tables of OCR'd pages
    turns = turns_from_metadata(parsed.metadata)  # OCR'd pages read turned upright
    seconds = PDF_PICTURE_OCR_BUDGET_S if source.mime_type == PDF else PICTURE_OCR_BUDGET_S
    pictures = PictureOcr(ocr, known_texts(parsed.metadata), CpuBudget(seconds))  # per document
    if source.mime_type == PDF:
        found = pdf_visuals(data, ocr_pages, options, regions, layout, on_page, pictures, turns)
    elif source.mime_type == PPTX:
        found = pptx_visuals(
            data,
            max_per_page=options.max_per_page,
            min_side=options.min_side,
            on_page=on_page,
            pictures=pictures,
        )
    elif source.mime_type == DOCX:
        found = docx_visuals(data, max_pictures=options.max_per_page * 50, pictures=pictures)
    elif source.mime_type.startswith("image/") and options.tiles != "none":
        found = image_visuals(
            data,
            source.filename,
            {},
            max_pages=options.max_pages,
            regions=regions,
            min_side=options.min_side,
            max_per_page=options.max_per_page,
            on_page=on_page,
            turns=turns,
        )
    else:
        return []
    texts = _page_texts(parsed)
    # A scanned page has no text layer: its tile's text is what OCR read there.
    filled = [
        v if v.text or v.kind != "tile" else _with_text(v, texts.get(v.page, "")) for v in found
    ]
    # A blank page (no words, no figure or table) has nothing a tile could be found by: its
    # empty summary embedded as noise and surfaced in unrelated searches.
    pictured = {v.page for v in filled if v.kind != "tile"}
    return [v for v in filled if v.kind != "tile" or v.text.strip() or v.page in pictured]


def store_visuals(
    objects: object,
    namespace: str,
    source: DocumentSource,
    found: Sequence[FoundVisual],
    chunks: Sequence[TextChunk],
) -> list[StoredVisual]:
    """Write each picture and build its VisualChunk with the four anchors."""
    root = source.filename or source.document_id
    stored: list[StoredVisual] = []
    counts: dict[tuple[int, str], int] = {}
    for visual in found:
        n = counts[(visual.page, visual.kind)] = counts.get((visual.page, visual.kind), 0) + 1
        image_id = f"{source.document_id}-p{visual.page}-{visual.kind}{n}"
        key = object_key(
            namespace,
            source.kb_name,
            source.document_id,
            VISUALS_PART,
            f"{image_id}.{EXTENSIONS[visual.media_type]}",
        )
        objects.put(key, io.BytesIO(visual.image), content_type=visual.media_type)  # type: ignore[attr-defined]
        found_anchors = anchors(visual, chunks, root)
        bbox = [round(v, 4) for v in visual.bbox]
        chunk = VisualChunk(
            chunk_id=image_id,
            document_id=source.document_id,
            kb_name=source.kb_name,
            image_id=image_id,
            page=visual.page,
            chunk_type=visual.kind,
            parent_section=found_anchors.parent_section,
            content_summary=found_anchors.content_summary,
            source_chunk_id=found_anchors.source_chunk_id,
            position=",".join(f"{v:.4f}" for v in visual.bbox),
            metadata={
                **found_anchors.fields,
                "bbox": bbox,
                "boxes": [{"page": visual.page, "bbox": bbox}],
                "width": visual.width,
                "height": visual.height,
                "media_type": visual.media_type,
                "object_key": key,
                "caption": visual.caption,
                "section_title": found_anchors.heading,
            },
        )
        stored.append(StoredVisual(chunk, visual.image))
    return stored


def visuals_prefix(namespace: str, kb_name: str, document_id: str) -> str:
    """Where a document's pictures live (an attempt that fails deletes them)."""
    return validate_prefix(namespace, kb_name, document_id, VISUALS_PART)


def _page_texts(parsed: ParseResult) -> dict[int, str]:
    texts: dict[int, list[str]] = {}
    for section in parsed.sections:
        if section.page is not None:
            texts.setdefault(section.page, []).extend(
                t for t in (section.heading, section.content) if t
            )
    return {page: " ".join(" ".join(parts).split()) for page, parts in texts.items()}


def _with_text(visual: FoundVisual, text: str) -> FoundVisual:
    return replace(visual, text=text)
