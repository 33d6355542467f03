"""``GET /documents/{id}/pages/{n}``: one page of a document as an image, for page previews."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from eagle_rag.api.deps import App, Who
from eagle_rag.api.etags import not_modified
from eagle_rag.api.page_images import MAX_WIDTH, MIN_WIDTH, is_paged, page_image
from eagle_rag.api.schemas import ERRORS
from eagle_rag.errors import NotFoundError

router = APIRouter(responses=ERRORS)
CACHE = "private, max-age=86400"  # private: the page is behind the caller's key


@router.get(
    "/documents/{document_id}/pages/{page}",
    tags=["documents"],
    response_class=Response,
    responses={200: {"content": {"image/png": {}}, "description": "The page image"}},
)
async def get_page(
    document_id: str,
    page: int,
    request: Request,
    app: App,
    who: Who,
    width: Annotated[int, Query(ge=MIN_WIDTH, le=MAX_WIDTH)] = 1000,
) -> Response:
    """Page ``page`` as PNG, ``width`` pixels wide (narrower when the page is so tall that its
    height would pass 4,800 px): a PDF page rendered, or a frame of an image document (a
    multi-page TIFF has one per page); 404 for a page the document does not have."""
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    if not is_paged(document.mime_type) or not document.object_key:
        raise NotFoundError(f"{document.filename} has no page images", document_id=document_id)
    etag = f'"{document.sha256}-{page}-{width}"'
    headers = {"ETag": etag, "Cache-Control": CACHE}
    if not_modified(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    key = document.object_key
    data = await asyncio.to_thread(lambda: b"".join(app.objects.open(key)))
    image = await asyncio.to_thread(
        page_image, data, document.mime_type, page, width, filename=document.filename
    )
    headers["X-Page-Count"] = str(image.pages)
    return Response(image.content, media_type=image.media_type, headers=headers)
