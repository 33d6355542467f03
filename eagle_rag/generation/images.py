"""Images in answers: the pictures a vision model sees, and the one numbering of sources.

Text sources are ``[1]..[T]``, attachments ``[T+1]..[T+A]``, images ``[T+A+1]..``: the
``index`` of every source the client receives is the number the model was shown, so a
citation of an attachment or an image resolves (and is checked) like one of a text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagle_rag.generation.prompt import Attachment
from eagle_rag.ingest.pixelrag.stored_pictures import stored_picture
from eagle_rag.models.visual_encoders import data_url
from eagle_rag.retrieval.pack import Passage


def picture_url(objects: Any, passage: Passage) -> str | None:
    """The visual's stored picture as a data URL; None when it cannot be loaded (skipped)."""
    picture = stored_picture(objects, passage.metadata.get("fields") or {})
    return data_url(picture[0]) if picture is not None else None


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
