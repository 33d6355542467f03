"""A visual hit's picture is handed on (MCP image content, chat image parts) only when it is a
stored PNG/JPEG of bounded size; anything else costs the picture, never the answer."""

from __future__ import annotations

import io
from pathlib import Path

from eagle_rag.ingest.pixelrag.stored_pictures import MAX_PICTURE_BYTES, stored_picture
from eagle_rag.storage.local import LocalObjectStore

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def test_only_a_stored_png_or_jpeg_of_bounded_size_is_handed_on(tmp_path: Path) -> None:
    objects = LocalObjectStore(tmp_path)
    objects.put("ns/kb/doc/visuals/a.png", io.BytesIO(PNG))
    objects.put("ns/kb/doc/visuals/big.png", io.BytesIO(b"x" * (MAX_PICTURE_BYTES + 1)))
    good = {"object_key": "ns/kb/doc/visuals/a.png", "media_type": "image/png"}
    assert stored_picture(objects, good) == (PNG, "image/png")
    assert stored_picture(objects, {**good, "media_type": "text/html"}) is None
    assert stored_picture(objects, {"media_type": "image/png"}) is None  # no key
    assert stored_picture(objects, {**good, "object_key": "ns/kb/doc/visuals/gone.png"}) is None
    big = {**good, "object_key": "ns/kb/doc/visuals/big.png"}
    assert stored_picture(objects, big) is None
