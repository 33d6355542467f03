"""``core_retrieve_visual``'s result: the image sources as structured content, and each
picture as MCP image content (base64 + MIME type) after a text block naming its anchors, so an
agent sees the figure itself and knows where it sits (document, page, section, source chunk)."""

from __future__ import annotations

import base64
import json
from typing import Any

from fastmcp.tools import ToolResult
from mcp.types import ContentBlock, ImageContent, TextContent

from eagle_rag.ingest.pixelrag.stored_pictures import stored_picture
from eagle_rag.retrieval.pack import ContextPack, Passage
from eagle_rag.retrieval.wire import is_image, search_response

ANCHORS = (
    "index",
    "image_id",
    "document_id",
    "filename",
    "page",
    "chunk_type",
    "parent_section",
    "source_chunk_id",
    "bbox",
    "score",
)


def visual_result(pack: ContextPack, objects: Any, *, with_images: bool) -> ToolResult:
    sources: list[dict[str, Any]] = search_response(pack)["sources"]["image"]
    passages = [p for p in pack.passages if is_image(p)]
    content: list[ContentBlock] = []
    for source, passage in zip(sources, passages, strict=True):
        anchors = {k: source.get(k) for k in ANCHORS}
        summary = source.get("content_summary") or ""
        content.append(TextContent(type="text", text=json.dumps(anchors) + "\n" + summary))
        picture = _picture(passage, objects) if with_images else None
        if picture is not None:
            data, media_type = picture
            content.append(ImageContent(type="image", data=data, mime_type=media_type))
    if not content:
        content.append(TextContent(type="text", text="no image matched the query"))
    return ToolResult(content=content, structured_content={"sources": sources})


def _picture(passage: Passage, objects: Any) -> tuple[str, str] | None:
    """The stored picture as base64, or None when it cannot be read (the hit stays listed)."""
    picture = stored_picture(objects, passage.metadata.get("fields") or {})
    if picture is None:
        return None
    data, media_type = picture
    return base64.b64encode(data).decode("ascii"), media_type
