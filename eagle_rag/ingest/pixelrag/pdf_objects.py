"""A PDF page's objects with their boxes on the page, including those inside Form XObjects.

PDFium gives an object that sits inside a Form XObject (a figure placed by LaTeX's
``\\includegraphics``, a chart pasted from a spreadsheet or a slide tool) its bounds in the
form's own coordinates, not the page's: read as page boxes they land anywhere, often off the
page, and the figure is cut from the wrong place or not found at all. Each nested object's
bounds are mapped through the matrix of every form that holds it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pypdfium2 as pdfium

from eagle_rag.ingest.pixelrag.geometry import BBox, clamp

# Forms inside forms inside forms are rare; deeper ones are drawings, not figures.
MAX_DEPTH = 3


def page_objects(
    page: pdfium.PdfPage, types: Sequence[int], max_depth: int = MAX_DEPTH
) -> Iterator[tuple[pdfium.PdfObject, BBox]]:
    """Objects of ``types`` (``FPDF_PAGEOBJ_*``), top-level and nested, each with its box
    normalised to the page (top-left origin, clamped to the page)."""
    width, height = page.get_size()
    for item in page.get_objects(filter=tuple(types), max_depth=max_depth):
        left, bottom, right, top = page_bounds(item)
        yield item, clamp((left / width, 1 - top / height, right / width, 1 - bottom / height))


def page_bounds(item: pdfium.PdfObject) -> tuple[float, float, float, float]:
    """``(left, bottom, right, top)`` in page points, through the forms that hold ``item``."""
    left, bottom, right, top = item.get_bounds()
    container = getattr(item, "container", None)
    while container is not None:
        left, bottom, right, top = container.get_matrix().on_rect(left, bottom, right, top)
        container = getattr(container, "container", None)
    return left, bottom, right, top
