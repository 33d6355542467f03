"""What an upload's ``metadata`` may hold.

It is kept on the document, travels with every chunk into Milvus (a JSON field), is shown beside
Core's own fields and filtered on. So it may not take the name of a field Core keeps for the
document or chunk (a ``document_id`` of the uploader's choosing was shown on every hit, a
``remote_document_id`` would be the id a bridged KB's deletion removes remotely), and its
numbers must be ones JSON and Milvus can hold: an integer beyond int64 failed the task at
upsert with Milvus's error, and ``1e999`` was stored as null.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.years import check_metadata_year
from eagle_rag.unicode_forms import nfc

# The fields every chunk or document record carries of its own (see retrieval/wire.py and
# ingest/pipeline.py); ``year`` is a document field an upload may set, checked on its own.
RESERVED_KEYS = frozenset(
    {
        "chunk_id",
        "chunk_type",
        "collection",
        "document_id",
        "filename",
        "image_id",
        "kb_name",
        "namespace",
        "page_nums",
        "path",
        "plugin_namespace",
        "remote_document_id",
        "source_type",
        "source_url",
    }
)
_INT64 = (-(2**63), 2**63 - 1)


def checked_upload_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The upload's metadata with keys and strings in NFC (a value typed decomposed matches a
    filter typed composed), or InvalidInputError naming the key it may not hold."""
    if metadata is None:
        return None
    normalized: dict[str, Any] = nfc(metadata)
    _check_upload_metadata(normalized)
    return normalized


def _check_upload_metadata(metadata: Mapping[str, Any]) -> None:
    if not metadata:
        return
    taken = sorted(k for k in metadata if k in RESERVED_KEYS)
    if taken:
        raise InvalidInputError(
            f"metadata key {taken[0]!r} is a field Core keeps for every document and chunk; "
            f"name yours otherwise (reserved: {', '.join(sorted(RESERVED_KEYS))})",
            field=f"metadata.{taken[0]}",
        )
    for key, value in metadata.items():
        _check_numbers(value, f"metadata.{key}")
    check_metadata_year(metadata)


def _check_numbers(value: Any, where: str) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        raise InvalidInputError(f"{where} is out of the 64-bit integer range", field=where)
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"{where} must be a finite number", field=where)
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_numbers(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_numbers(item, f"{where}[{index}]")
