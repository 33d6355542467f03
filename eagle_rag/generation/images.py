"""Images in answers: the pictures a vision model sees, and the one numbering of sources.

Text sources are ``[1]..[T]``, attachments ``[T+1]..[T+A]``, images ``[T+A+1]..``: the
``index`` of every source the client receives is the number the model was shown, so a
citation of an attachment or an image resolves (and is checked) like one of a text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from eagle_rag.generation.prompt import Attachment
from eagle_rag.models.visual_encoders import data_url
from eagle_rag.retrieval.pack import Passage

logger = logging.getLogger(__name__)
MAX_PICTURE_BYTES = 8 * 1024 * 1024  # larger pictures are not sent (a model's request limit)


def picture_url(objects: Any, passage: Passage) -> str | None:
    """The visual's stored picture as a data URL; None when it cannot be loaded (skipped)."""
    fields = passage.metadata.get("fields") or {}
    key = fields.get("object_key")
    if not key:
        return None
    try:
        data = b"".join(objects.open(str(key)))
    except Exception as exc:  # a missing or unreadable picture costs the picture only
        logger.warning("image %s not sent to the model: %s", key, exc)
        return None
    if len(data) > MAX_PICTURE_BYTES:
        return None
    return data_url(data)


def one_numbering(
    sources: dict[str, list[dict[str, Any]]], attachments: Sequence[Attachment]
) -> dict[str, Any]:
    """The answer's sources with attachments and images numbered after the text sources."""
    after_text = len(sources["text"])
    numbered: dict[str, Any] = dict(sources)
    if attachments:
        numbered["attachments"] = [
            {"index": after_text + i, "name": a.name} for i, a in enumerate(attachments, 1)
        ]
    first_image = after_text + len(attachments) + 1
    numbered["image"] = [
        {**image, "index": first_image + i} for i, image in enumerate(sources["image"])
    ]
    return numbered
