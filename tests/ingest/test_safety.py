from __future__ import annotations

import io
import zipfile

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.safety import ArchiveLimits, check_archive
from tests.ingest import documents as docs


def _archive(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_real_office_files_pass() -> None:
    limits = ArchiveLimits(max_entries=1000, max_uncompressed_bytes=10**8, max_ratio=200)
    for data in (docs.docx_bytes(), docs.pptx_bytes(), docs.xlsx_bytes()):
        check_archive(data, limits)


def test_total_expansion_is_capped() -> None:
    data = _archive({f"part{i}.xml": b"x" * 4000 for i in range(5)})  # 20 kB, stored
    with pytest.raises(InvalidInputError, match="expands to 20000 bytes"):
        check_archive(data, ArchiveLimits(100, 10_000, 1000))
    check_archive(data, ArchiveLimits(100, 20_000, 1000))


def test_entry_count_and_ratio_are_capped() -> None:
    with pytest.raises(InvalidInputError, match="51 entries"):
        check_archive(docs.many_entries_xlsx(50), ArchiveLimits(50, 10**9, 1000))
    with pytest.raises(InvalidInputError, match="zip bomb"):
        check_archive(docs.zip_bomb_docx(), ArchiveLimits(100, 10**9, 200))


def test_corrupt_archive() -> None:
    with pytest.raises(InvalidInputError, match="corrupt zip"):
        check_archive(b"PK\x03\x04not really", ArchiveLimits(10, 10, 10))
