"""Open an image file as upright RGB pages, refusing what cannot be read safely.

Pillow reads only the header on ``open``; the pixel count is checked against the limit before
any pixel is decoded, so a decompression bomb costs nothing. Every mode a scanner or a phone
writes (1-bit, 16-bit grey, palette, CMYK, alpha) becomes 8-bit RGB on white.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Iterator

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from eagle_rag.errors import InvalidInputError

# What Pillow raises on a damaged file while reading headers or pixels (a cut TIFF's missing
# page header is a TypeError "Missing dimensions", a cut frame table an EOFError).
DECODE_ERRORS = (OSError, ValueError, SyntaxError, TypeError, EOFError, KeyError)
# Pillow's own default limit (about 89 megapixels: a 9,500 × 9,500 page, 600 dpi A1).
MAX_PIXELS = 89_478_485
# Longer than this many times its width (or the reverse), an image holds no legible text once
# OCR fits its long side to the model's input (and rapidocr's resize fails outright at ~125:1).
MAX_ASPECT = 100
STRETCH_ROWS = 256  # rows of a 16-bit or float image scaled to 8 bits at a time


def page_count(data: bytes, filename: str) -> int:
    with _opened(data, filename) as image:
        return _frame_count(image, filename)


def pages(
    data: bytes, filename: str, *, max_pages: int, max_pixels: int = MAX_PIXELS
) -> Iterator[Image.Image]:
    """Each frame (multi-page TIFF) as an RGB image; InvalidInputError for bombs, truncated
    or corrupt files and too many pages."""
    with _opened(data, filename) as image:
        frames = _frame_count(image, filename)
        if frames > max_pages:
            raise InvalidInputError(
                f"the image has {frames} pages (limit {max_pages})", filename=filename
            )
        for frame in _frames(image, frames, filename):
            yield _decoded(frame, filename, max_pixels)


def page(
    data: bytes, filename: str, number: int, *, max_pixels: int = MAX_PIXELS
) -> tuple[Image.Image | None, int]:
    """Frame ``number`` (1-based) as upright RGB, decoding no other frame, and the frame
    count; (None, count) for a number past the last frame."""
    with _opened(data, filename) as image:
        count = _frame_count(image, filename)
        if not 1 <= number <= count:
            return None, count
        frame = next(_frames(image, number, filename, first=number - 1))
        return _decoded(frame, filename, max_pixels), count


def _decoded(frame: Image.Image, filename: str, max_pixels: int) -> Image.Image:
    """The frame's pixels, upright RGB, once its size passed the bomb and aspect checks."""
    width, height = frame.size
    if width * height > max_pixels:
        raise InvalidInputError(
            f"the image is {width}×{height} pixels, over the limit of {max_pixels} "
            "(a decompression bomb, or a scan at a needlessly high resolution)",
            filename=filename,
            pixels=width * height,
            limit=max_pixels,
        )
    _check_aspect(width, height, filename)
    try:
        frame.load()
        return to_rgb(ImageOps.exif_transpose(frame) or frame)
    except DECODE_ERRORS as exc:
        raise _corrupt(exc, filename) from exc


def _frame_count(image: Image.Image, filename: str) -> int:
    """Counting a TIFF's pages reads every page's header: a cut one raises here."""
    try:
        return int(getattr(image, "n_frames", 1))
    except DECODE_ERRORS as exc:
        raise _corrupt(exc, filename) from exc


def _frames(
    image: Image.Image, count: int, filename: str, *, first: int = 0
) -> Iterator[Image.Image]:
    for index in range(first, count):
        try:
            image.seek(index)
        except DECODE_ERRORS as exc:
            raise _corrupt(exc, filename) from exc
        yield image


def _corrupt(exc: BaseException, filename: str) -> InvalidInputError:
    reason = str(exc) or type(exc).__name__
    return InvalidInputError(f"the image is truncated or corrupt: {reason}", filename=filename)


def _check_aspect(width: int, height: int, filename: str) -> None:
    if max(width, height) > MAX_ASPECT * max(1, min(width, height)):
        raise InvalidInputError(
            f"the image is {width}×{height} pixels: a strip over {MAX_ASPECT}:1 is too thin "
            "for its text to be read",
            filename=filename,
            width=width,
            height=height,
        )


@contextlib.contextmanager
def _opened(data: bytes, filename: str) -> Iterator[Image.Image]:
    """Pillow's open with our errors; the bomb check is ours, made before decoding."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        # Pillow refuses past twice its own limit before we see the size: say ours, as
        # _decoded does for the rest, with the size Pillow read from the header.
        found = re.search(r"\((\d+) pixels\)", str(exc))
        pixels = int(found.group(1)) if found else None
        size = f"{pixels} pixels" if pixels else "too many pixels"
        raise InvalidInputError(
            f"the image has {size}, over the limit of {MAX_PIXELS} (a decompression bomb, or a "
            "scan at a needlessly high resolution)",
            filename=filename,
            pixels=pixels,
            limit=MAX_PIXELS,
        ) from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise InvalidInputError(
            f"the image is corrupt or not a readable image: {exc}", filename=filename
        ) from exc
    try:
        yield image
    finally:
        image.close()


def to_rgb(image: Image.Image) -> Image.Image:
    """8-bit RGB; transparency flattened onto white (transparent black would read as ink)."""
    mode = image.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        image = _stretch(image)
        mode = image.mode
    if mode == "P" or mode in ("LA", "La", "PA"):
        image = image.convert("RGBA")
    elif mode == "CMYK":
        image = image.convert("RGB")
    if image.mode in ("RGBA", "RGBa"):
        white = Image.new("RGB", image.size, "white")
        white.paste(image, mask=image.getchannel("A"))
        return white
    return image.convert("RGB")


def _stretch(image: Image.Image) -> Image.Image:
    """16-bit or float grey → 8-bit over its actual range (Pillow's convert would clip at 255,
    turning most 16-bit scans white). Scaled STRETCH_ROWS rows at a time: a float copy of the
    whole picture would be four to eight times its 8-bit size."""
    array = np.asarray(image)  # its own type (uint16, int32 or float32), not float64
    low, high = float(array.min()), float(array.max())
    scaled = np.full(array.shape, 255, dtype=np.uint8)
    if high > low:
        factor = np.float32(255.0 / (high - low))
        for top in range(0, array.shape[0], STRETCH_ROWS):
            rows = array[top : top + STRETCH_ROWS].astype(np.float32)
            scaled[top : top + STRETCH_ROWS] = ((rows - np.float32(low)) * factor).round()
    return Image.fromarray(scaled, mode="L")
