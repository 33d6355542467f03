"""Attachments sent with a question: plain text, or a file parsed by the registered parsers."""

from __future__ import annotations

import base64
import binascii
import time
from typing import TYPE_CHECKING

from eagle_rag.errors import InvalidInputError, PayloadTooLargeError
from eagle_rag.generation.prompt import Attachment
from eagle_rag.ingest.core_steps import parse_bytes
from eagle_rag.ingest.detect import detect

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime


def read_attachment(
    app: Runtime, name: str, *, text: str | None, content_base64: str | None
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
    started = time.perf_counter()
    detected = detect(data, name)
    parsers = [r.component for r in app.registries.parsers]
    parsed = parse_bytes(data, name, detected.mime_type, parsers, app.settings.ingest)
    return Attachment(name, parsed.text, parse_ms=(time.perf_counter() - started) * 1000)
