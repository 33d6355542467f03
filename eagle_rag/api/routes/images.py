"""``GET /images/{image_id}``: the picture of a visual hit (figure, table or page tile).

The id is looked up in this namespace's ``eagle_visual`` (another namespace's image is simply
not there), the document in this namespace's catalog, and the caller's key must cover its KB.
The object key read back from the row must lie under that document's visuals prefix, so a
tampered row cannot make this route read anything else.

An image id is ``{document_id}-p{page}-{kind}{n}``, and a document keeps its id when it goes
through the pipeline again (``POST /knowledge_bases/{kb}/rebuild``, a consistency repair, a
retried task), while what it extracts may change (other settings, newer layout or OCR models):
the same id can name another picture later. So the ETag is the picture's own hash and caches
revalidate (a 304 costs no transfer), never ``immutable``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response

from eagle_rag.api.deps import App, Who
from eagle_rag.api.etags import not_modified
from eagle_rag.api.schemas import ERRORS
from eagle_rag.errors import InvalidInputError, NotFoundError
from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.ingest.pixelrag.stored_pictures import MEDIA_TYPES
from eagle_rag.ingest.pixelrag.visuals import visuals_prefix

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

router = APIRouter(responses=ERRORS)
# private: behind the caller's key; a minute fresh (a page of results shows each thumbnail once),
# then revalidated against the picture's hash, since a rebuilt document reuses its image ids.
CACHE = "private, max-age=60, must-revalidate"
IMAGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@router.get(
    "/images/{image_id}",
    tags=["documents"],
    response_class=Response,
    responses={
        200: {"content": {t: {} for t in MEDIA_TYPES}, "description": "The visual's picture"}
    },
)
async def get_image(image_id: str, request: Request, app: App, who: Who) -> Response:
    """The stored picture of a visual chunk (``sources.image[].image_id``), with its content
    type, an ETag and private cache headers; 404 for an unknown id."""
    if not IMAGE_ID.match(image_id):
        raise InvalidInputError("image_id has characters an image id never has", field="image_id")
    row = await asyncio.to_thread(_row, app, image_id, who.kb_names)
    document = await asyncio.to_thread(
        app.repositories.documents.get, str(row["document_id"]), within=who.kb_names
    )
    metadata: dict[str, Any] = row.get("metadata") or {}
    key = str(metadata.get("object_key") or "")
    media_type = str(metadata.get("media_type") or "")
    if not key.startswith(visuals_prefix(app.namespace, document.kb_name, document.id)):
        raise NotFoundError(f"image {image_id} has no stored picture", image_id=image_id)
    if media_type not in MEDIA_TYPES:
        raise NotFoundError(f"image {image_id} has no stored picture", image_id=image_id)
    try:
        data = await asyncio.to_thread(lambda: b"".join(app.objects.open(key)))
    except NotFoundError:
        raise NotFoundError(f"image {image_id} has no stored picture", image_id=image_id) from None
    etag = f'"{hashlib.sha256(data).hexdigest()[:32]}"'
    headers = {"ETag": etag, "Cache-Control": CACHE, "X-Content-Type-Options": "nosniff"}
    if not_modified(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)


def _row(app: EagleApp, image_id: str, within: Collection[str] | None) -> dict[str, Any]:
    """The visual row of ``image_id``; one of a KB outside ``within`` (the key's KBs) is not
    found, exactly as a missing one is."""
    rows = app.vectors.query(
        VISUAL_COLLECTION,
        eq("image_id", image_id),
        output_fields=["document_id", "kb_name", "metadata"],
        limit=1,
    )
    if not rows or (within is not None and rows[0].get("kb_name") not in within):
        raise NotFoundError(f"no image {image_id!r}", image_id=image_id)
    row: dict[str, Any] = rows[0]
    return row
