"""A document's year, the one document field of its metadata that filters compare as a number
(``{"year": {"gte": 2021}}``): from the upload's metadata, else the parser's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagle_rag.errors import InvalidInputError


def document_year(value: Any) -> int | None:
    """An integer year, or a text that starts with one ("2024-05-01"); None for anything else."""
    try:
        year = int(str(value)[:4]) if value is not None and not isinstance(value, bool) else None
    except ValueError:
        return None
    return year if year is not None and 1000 <= year <= 9999 else None


def check_metadata_year(metadata: Mapping[str, Any] | None) -> None:
    """Refuse an upload's ``year`` that is no year: it was accepted, shown on the document and
    left off its chunks, so no year filter could ever find the document."""
    if metadata and "year" in metadata and document_year(metadata["year"]) is None:
        raise InvalidInputError(
            "metadata.year must be a year: an integer from 1000 to 9999, or a date that starts "
            f"with one (got {str(metadata['year'])[:40]!r})",
            field="metadata.year",
        )
