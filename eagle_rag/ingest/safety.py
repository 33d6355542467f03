"""Guards that run before a parser opens a file: size, page counts and zip bombs."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from eagle_rag.errors import InvalidInputError
from eagle_rag.settings import IngestSettings


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_entries: int
    max_uncompressed_bytes: int
    max_ratio: float

    @classmethod
    def from_settings(cls, ingest: IngestSettings) -> ArchiveLimits:
        return cls(
            ingest.archive_max_entries,
            ingest.archive_max_uncompressed_bytes,
            ingest.archive_max_ratio,
        )


def check_archive(data: bytes, limits: ArchiveLimits) -> None:
    """Refuse a zip container (DOCX/PPTX/XLSX) whose declared expansion is a bomb.

    Uses the central directory's sizes, so nothing is decompressed to decide.
    """
    try:
        entries = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except zipfile.BadZipFile as exc:
        raise InvalidInputError(f"the file is a corrupt zip archive: {exc}") from exc
    if len(entries) > limits.max_entries:
        raise InvalidInputError(
            f"the archive has {len(entries)} entries (limit {limits.max_entries})"
        )
    total = sum(entry.file_size for entry in entries)
    if total > limits.max_uncompressed_bytes:
        raise InvalidInputError(
            f"the archive expands to {total} bytes (limit {limits.max_uncompressed_bytes})"
        )
    for entry in entries:
        ratio = entry.file_size / max(entry.compress_size, 1)
        if entry.file_size > 1024 * 1024 and ratio > limits.max_ratio:
            raise InvalidInputError(
                f"archive entry {entry.filename!r} expands {ratio:.0f}x "
                f"(limit {limits.max_ratio:.0f}x): refusing a possible zip bomb"
            )
