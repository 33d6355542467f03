"""Opening a PDF: PDFium first, a second reader (pypdf) for the files PDFium gives up on.

PDFium refuses some files other readers open without complaint (a damaged header, a trailer
without ``/Root``, a broken cross-reference table it cannot rebuild). Such a file is re-read by
pypdf in its forgiving mode and rewritten, and PDFium opens the rewrite; only when both readers
fail is the file refused, with both reasons. An encrypted file is refused clearly by either.
The Info dictionary's title, when PDFium cannot parse it, is read by pypdf as well.
"""

from __future__ import annotations

import ctypes
import io

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.parsers.pdfium_lock import PDFIUM


def readable(data: bytes, filename: str) -> tuple[bytes, bool]:
    """The bytes PDFium will open (the original, or pypdf's rewrite) and whether they were
    rewritten."""
    try:
        with PDFIUM:  # PDFium is not thread-safe (pdfium_lock.py)
            pdfium.PdfDocument(data).close()
        return data, False
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise encrypted(filename) from exc
        first = exc
    try:
        return _rewrite(data, filename), True
    except InvalidInputError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files
        raise InvalidInputError(
            f"the PDF is corrupt or unreadable: {first} (a second reader also failed: {exc})",
            filename=filename,
        ) from exc


def _rewrite(data: bytes, filename: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        raise encrypted(filename)
    if not reader.pages:
        raise ValueError("no pages found")
    writer = PdfWriter(clone_from=reader)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def encrypted(filename: str | None) -> InvalidInputError:
    return InvalidInputError(
        "the PDF is encrypted; upload it without a password", filename=filename
    )


def open_pdf(data: bytes, filename: str) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise InvalidInputError(
            f"the PDF is corrupt or unreadable: {exc}", filename=filename
        ) from exc


def read_title(document: pdfium.PdfDocument, data: bytes) -> str:
    """The Info dictionary's title, read raw: a title in broken UTF-16 (a lone surrogate, on
    which pypdfium2's metadata reader raises) costs only its bad characters. pypdf reads it
    where PDFium cannot; a malformed Info dictionary costs the title, not the document."""
    try:
        return _meta_text(document, b"Title")
    except Exception:
        pass
    try:
        from pypdf import PdfReader

        info = PdfReader(io.BytesIO(data), strict=False).metadata
        return str((info.title if info else "") or "").strip()
    except Exception:
        return ""


def _meta_text(document: pdfium.PdfDocument, key: bytes) -> str:
    size = pdfium_c.FPDF_GetMetaText(document.raw, key, None, 0)  # bytes, with the NUL
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDF_GetMetaText(document.raw, key, buffer, size)
    text = buffer.raw[: size - 2].decode("utf-16-le", errors="replace")
    return text.replace("\ufffd", "").strip()
