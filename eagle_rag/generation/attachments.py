"""Attachments sent with a question: plain text, or a file parsed by the registered parsers."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from eagle_rag.errors import InvalidInputError, PayloadTooLargeError
from eagle_rag.generation.prompt import Attachment
from eagle_rag.ingest.detect import BINARY_TYPES, detect
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.registry import parser_for
from eagle_rag.ingest.safety import ArchiveLimits, check_archive


def read_attachment(
    app: Any, name: str, *, text: str | None, content_base64: str | None
) -> Attachment:
    """The attachment's text; a file is type-checked and parsed exactly like an upload."""
    if (text is None) == (content_base64 is None):
        raise InvalidInputError(
            f"attachment {name!r} needs exactly one of text or content_base64", field="attachments"
        )
    if text is not None:
        return Attachment(name, text)
    limit = app.settings.ingest.max_file_bytes
    if len(content_base64 or "") > limit * 4 // 3 + 4:
        raise PayloadTooLargeError(f"attachment {name!r} is larger than {limit} bytes")
    try:
        data = base64.b64decode(content_base64 or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError(f"attachment {name!r} is not valid base64") from exc
    detected = detect(data, name)
    if detected.mime_type in BINARY_TYPES and detected.mime_type != "application/pdf":
        check_archive(data, ArchiveLimits.from_settings(app.settings.ingest))
    parser = parser_for(detected.mime_type, [r.component for r in app.registries.parsers])
    parsed = parser.parse(
        ParseContext(data, name, detected.mime_type, app.settings.ingest.max_pages)
    )
    return Attachment(name, parsed.text)
