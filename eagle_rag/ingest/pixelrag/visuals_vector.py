"""Charts drawn as vectors: most report and paper charts are path objects, not images.

The path objects of a page are grouped by proximity (boxes closer than ``GAP`` merge); a group
of at least ``MIN_PATHS`` paths whose box is figure-sized is a chart. Page frames and rules that
span the page are left out first, and groups that are ruled tables are dropped by the caller.
"""

from __future__ import annotations

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.ingest.pixelrag.geometry import BBox, area, union
from eagle_rag.ingest.pixelrag.pdf_objects import page_objects

GAP = 0.03  # of the page side: strokes of one chart (and small multiples) are this close
MIN_PATHS = 12
MAX_PATHS = 400  # beyond this a page is a drawing, and grouping would cost too much
PAGE_SIZED = 0.8


def vector_figure_boxes(page: pdfium.PdfPage, min_side: float) -> list[BBox]:
    """Boxes of path groups that look like charts (paths inside forms placed on the page)."""
    boxes = []
    for _, box in page_objects(page, (pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=2):
        if area(box) < PAGE_SIZED and (box[2] - box[0]) < 0.95:
            boxes.append(box)
        if len(boxes) > MAX_PATHS:
            return []
    groups = _groups(boxes)
    return [
        union(group)
        for group in groups
        if len(group) >= MIN_PATHS and _figure_sized(union(group), min_side)
    ]


def _groups(boxes: list[BBox]) -> list[list[BBox]]:
    """Connected groups of boxes that touch within GAP (union-find over pairs)."""
    parent = list(range(len(boxes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            b = boxes[j]
            near_x = a[0] - GAP <= b[2] and b[0] - GAP <= a[2]
            if near_x and a[1] - GAP <= b[3] and b[1] - GAP <= a[3]:
                parent[root(i)] = root(j)
    grouped: dict[int, list[BBox]] = {}
    for i, box in enumerate(boxes):
        grouped.setdefault(root(i), []).append(box)
    return list(grouped.values())


def _figure_sized(box: BBox, min_side: float) -> bool:
    side_w, side_h = box[2] - box[0], box[3] - box[1]
    return min(side_w, side_h) >= max(min_side, 0.05) and area(box) <= PAGE_SIZED
