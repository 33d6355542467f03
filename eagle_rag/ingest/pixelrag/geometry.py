"""Normalised page boxes: ``(x0, y0, x1, y1)`` in [0, 1], origin at the page's top-left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

BBox = tuple[float, float, float, float]


def clamp(box: Sequence[float]) -> BBox:
    """Order the corners and keep them inside the page."""
    x0, y0, x1, y1 = (min(1.0, max(0.0, float(v))) for v in box)
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def normalise(box: Sequence[float], width: float, height: float) -> BBox:
    """Pixel (or point) coordinates with a top-left origin → the normalised box."""
    x0, y0, x1, y1 = box
    return clamp((x0 / width, y0 / height, x1 / width, y1 / height))


def union(boxes: Iterable[BBox]) -> BBox:
    items = list(boxes)
    if not items:
        raise ValueError("the union of no boxes is undefined")
    return (
        min(b[0] for b in items),
        min(b[1] for b in items),
        max(b[2] for b in items),
        max(b[3] for b in items),
    )


def unrotate(box: BBox, degrees: int) -> BBox:
    """Map a box found on an image turned ``degrees`` counter-clockwise back to the original.

    OCR reads the upright page; the user sees (and highlights on) the page as stored.
    """
    x0, y0, x1, y1 = box
    corners = [(x0, y0), (x1, y1)]
    if degrees % 360 == 90:  # upright (u', v') = (v, 1 - u)
        corners = [(1 - v, u) for u, v in corners]
    elif degrees % 360 == 180:
        corners = [(1 - u, 1 - v) for u, v in corners]
    elif degrees % 360 == 270:  # upright (u', v') = (1 - v, u)
        corners = [(v, 1 - u) for u, v in corners]
    (a, b), (c, d) = corners
    return clamp((a, b, c, d))


def overlap(a: BBox, b: BBox) -> float:
    """The area both boxes cover."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return width * height if width > 0 and height > 0 else 0.0


def area(box: BBox) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def center(box: BBox) -> tuple[float, float]:
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def contains(box: BBox, point: tuple[float, float], pad: float = 0.0) -> bool:
    x, y = point
    return box[0] - pad <= x <= box[2] + pad and box[1] - pad <= y <= box[3] + pad
