"""A visual hit's stored picture, for the surfaces that hand it on (MCP image content, image
parts for the chat model). ``GET /images/{id}`` checks more (the key's prefix, the caller's KB)
because its id comes from the caller; a hit's fields come from the store itself."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from eagle_rag.storage.base import ObjectStore

logger = logging.getLogger(__name__)
MAX_PICTURE_BYTES = 8 * 1024 * 1024  # larger pictures are not handed on (a model's request limit)
MEDIA_TYPES = ("image/png", "image/jpeg")  # what visuals are stored as


def stored_picture(objects: ObjectStore, fields: Mapping[str, Any]) -> tuple[bytes, str] | None:
    """(bytes, media type) of the hit's picture; None when it has none, of an unexpected type,
    too large, or unreadable: a missing picture costs the picture, never the answer."""
    key, media_type = fields.get("object_key"), fields.get("media_type")
    if not key or media_type not in MEDIA_TYPES:
        return None
    try:
        data = b"".join(objects.open(str(key)))
    except Exception as exc:
        logger.warning("picture %s not handed on: %s", key, exc)
        return None
    if len(data) > MAX_PICTURE_BYTES:
        return None
    return data, str(media_type)
