"""Decide what a file is from its bytes, and refuse files whose name or declared type lies.

Binary formats are recognised by signature (PDF, and the zip entries that make DOCX, PPTX and
XLSX); text formats by decoding plus structure (JSON parses, HTML has markup). The filename or a
declared MIME type then chooses among text formats (``.md`` vs ``.txt``), but may not turn a binary
file into text or one binary format into another.
"""

from __future__ import annotations

import io
import json
import re
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import IO

from eagle_rag.errors import InvalidInputError, UnsupportedMediaTypeError
from eagle_rag.ingest.legacy_charsets import legacy_reading

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
TEXT = "text/plain"
MARKDOWN = "text/markdown"
HTML = "text/html"
CSV = "text/csv"
JSON = "application/json"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
WEBP = "image/webp"
BMP = "image/bmp"

IMAGE_TYPES = frozenset({PNG, JPEG, TIFF, WEBP, BMP})
ARCHIVE_TYPES = frozenset({DOCX, PPTX, XLSX})  # zip containers: checked for zip bombs
BINARY_TYPES = frozenset({PDF, DOCX, PPTX, XLSX}) | IMAGE_TYPES
TEXT_TYPES = frozenset({TEXT, MARKDOWN, HTML, CSV, JSON})

EXTENSIONS = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".pptx": PPTX,
    ".xlsx": XLSX,
    ".txt": TEXT,
    ".text": TEXT,
    ".log": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".csv": CSV,
    ".tsv": CSV,
    ".json": JSON,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".jpe": JPEG,
    ".tif": TIFF,
    ".tiff": TIFF,
    ".webp": WEBP,
    ".bmp": BMP,
}
# The short names a query filters on (``filters: {"source_type": "pdf"}``).
SOURCE_TYPES = {
    PDF: "pdf",
    DOCX: "docx",
    PPTX: "pptx",
    XLSX: "xlsx",
    TEXT: "text",
    MARKDOWN: "markdown",
    HTML: "html",
    CSV: "csv",
    JSON: "json",
    **dict.fromkeys(IMAGE_TYPES, "image"),
}

MIME_ALIASES = {
    "text/x-markdown": MARKDOWN,
    "application/xhtml+xml": HTML,
    "text/tab-separated-values": CSV,
    "image/jpg": JPEG,
    "image/pjpeg": JPEG,
    "image/x-ms-bmp": BMP,
    "image/x-bmp": BMP,
}

_ZIP_MARKERS = {"word/document.xml": DOCX, "ppt/presentation.xml": PPTX, "xl/workbook.xml": XLSX}
_IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": PNG,
    b"\xff\xd8\xff": JPEG,
    b"II*\x00": TIFF,
    b"MM\x00*": TIFF,
}
# BMP's "BM" is too short to trust alone: the header's DIB size must be one BMP defines.
_BMP_DIB_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})
# A password-protected .docx/.xlsx/.pptx is an OLE compound file holding the encrypted zip in
# a stream of this name (MS-OFFCRYPTO); the name is in the file's directory, usually in its head.
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_OTHER_SIGNATURES = {
    b"GIF8": "image/gif",
    b"\xd0\xcf\x11\xe0": (
        "a legacy Office file (OLE: .doc, .xls, .ppt) or a password-protected one; save it as "
        ".docx, .xlsx or .pptx without a password"
    ),
    b"\x1f\x8b": "application/gzip",
    b"Rar!": "application/x-rar",
    b"\x7fELF": "application/x-executable",
}


@dataclass(frozen=True, slots=True)
class Detected:
    """The MIME type a file will be parsed as, and what its name or declaration claimed."""

    mime_type: str
    claimed: str | None


def claimed_type(filename: str, declared: str | None = None) -> str | None:
    """What the name (or an explicit, specific declaration) says the file is."""
    if declared:
        base = declared.split(";", 1)[0].strip().lower()
        base = MIME_ALIASES.get(base, base)
        if base in BINARY_TYPES or base in TEXT_TYPES:
            return base
    return EXTENSIONS.get(PurePosixPath(filename.lower()).suffix)


def sniff(data: bytes, *, whole: bool = True) -> str:
    """The type family the bytes show: a binary MIME type, or ``text/plain`` for decodable text.
    ``whole=False``: ``data`` is the head of a larger file, so an image's structure (a PNG's
    chunks, a TIFF's directory at its end) cannot be checked here: the caller checks the whole
    file with :func:`check_image`."""
    if not data:
        raise InvalidInputError("the file is empty")
    if data.startswith(b"%PDF-"):
        return PDF
    if data.startswith(b"PK\x03\x04"):
        return _office_type(data)
    image = _image_type(data)
    if image is not None:
        if whole:
            check_image(io.BytesIO(data), image)
        return image
    if data.startswith(_OLE) and _ENCRYPTED_PACKAGE in data:
        raise InvalidInputError(
            "the file is a password-protected Office document; upload it without a password"
        )
    for signature, kind in _OTHER_SIGNATURES.items():
        if data.startswith(signature):
            raise UnsupportedMediaTypeError(f"unsupported file type: {kind}", detected=kind)
    if decode_text(data) is None:
        raise UnsupportedMediaTypeError(
            "unsupported file type: binary data that is not a known format"
        )
    return TEXT


def _image_type(data: bytes) -> str | None:
    for signature, kind in _IMAGE_SIGNATURES.items():
        if data.startswith(signature):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return WEBP
    if (
        data[:2] == b"BM"
        and len(data) >= 18
        and int.from_bytes(data[14:18], "little") in (_BMP_DIB_SIZES)
    ):
        return BMP
    return None


def check_image(source: IO[bytes], kind: str) -> None:
    """Read the header (no pixels): a file that is not really an image is refused at upload."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(source) as image:
                if kind == PNG:
                    image.verify()  # walks the chunks and their checksums, decodes nothing
    except UnidentifiedImageError as exc:  # its message names a BytesIO object
        raise InvalidInputError(
            f"the image is corrupt: not a readable {kind} file", detected=kind
        ) from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise InvalidInputError(f"the image is corrupt: {exc}", detected=kind) from exc
    except Image.DecompressionBombError:
        return  # too large to parse: the parser refuses it with the limit spelled out


def _office_type(data: bytes) -> str:
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except zipfile.BadZipFile as exc:
        raise InvalidInputError(f"the file is a corrupt zip archive: {exc}") from exc
    for marker, kind in _ZIP_MARKERS.items():
        if marker in names:
            return kind
    raise UnsupportedMediaTypeError(
        "unsupported file type: a zip archive that is not DOCX, PPTX or XLSX"
    )


def decode_text(data: bytes) -> str | None:
    """Decode text, or None if binary: UTF-16 with BOM; UTF-8 with or without BOM (a few broken
    bytes in otherwise UTF-8 text become U+FFFD); Shift_JIS, EUC-KR, KOI8-R or Windows-1256 when
    the text reads as Japanese, Korean, Russian or Arabic in it (:mod:`legacy_charsets`);
    GB18030; else Windows-1252 / Latin-1.

    GB18030 decodes most Latin-1 text too ("Müller" as "M黮ler": an accented letter and the
    letter after it make one valid pair), so a GB18030 reading whose non-ASCII characters sit
    alone inside Latin words (real Chinese comes in runs) is taken for Western text instead.
    """
    read = _reading(data)
    return None if read is None else read[1]


def text_charset(data: bytes) -> str | None:
    """The charset ``decode_text`` reads ``data`` in, by its IANA name (for a Content-Type);
    None if binary. Judged on what is given: the head of a file will do."""
    read = _reading(data)
    return None if read is None else _IANA.get(read[0], read[0])


# Python's codec names as HTTP names them.
_IANA = MappingProxyType(
    {
        "utf-8-sig": "utf-8",
        "cp932": "Shift_JIS",
        "cp949": "EUC-KR",
        "koi8_r": "KOI8-R",
        "cp1256": "windows-1256",
        "gb18030": "GB18030",
        "cp1252": "windows-1252",
        "latin-1": "ISO-8859-1",
    }
)


def _reading(data: bytes) -> tuple[str, str] | None:
    """The codec and text ``decode_text`` takes; None if binary."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return "utf-16", data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data[:8192]:
        return None
    for codec, text in _readings(data):
        controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\t\n\r\f")
        return (codec, text) if controls <= len(text[:8192]) * 0.01 else None
    return None


def _readings(data: bytes) -> Iterator[tuple[str, str]]:
    """The plausible decodings of ``data``, best first, each with its codec."""
    try:
        yield "utf-8-sig", data.decode("utf-8-sig")
    except UnicodeDecodeError:
        lenient = data.decode("utf-8-sig", errors="replace")
        broken = lenient.count("\ufffd")
        others = sum(1 for ch in lenient if ord(ch) > 127) - broken
        if others and broken <= max(1, len(lenient) // 1000):  # UTF-8 with a stray byte
            yield "utf-8-sig", lenient
    legacy = legacy_reading(data)
    if legacy is not None:
        yield legacy
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        pass
    else:
        if not _latin_in_disguise(text):
            yield "gb18030", text
    try:
        yield "cp1252", data.decode("cp1252")
    except UnicodeDecodeError:  # one of its five unassigned bytes
        yield "latin-1", data.decode("latin-1")


_LONE_IN_WORD = re.compile(r"(?<![^\x00-\x7f])[^\x00-\x7f](?![^\x00-\x7f])")


def _latin_in_disguise(text: str) -> bool:
    """Whether nearly every non-ASCII character stands alone next to a Latin letter: how
    Latin-1 reads as GB18030; Chinese words are runs of two or more characters."""
    wide = sum(1 for ch in text if ord(ch) > 127)
    if not wide:
        return False
    lone = 0
    for match in _LONE_IN_WORD.finditer(text):
        before = text[match.start() - 1 : match.start()]
        after = text[match.end() : match.end() + 1]
        beside_letter = (before.isascii() and before.isalpha()) or (
            after.isascii() and after.isalpha()
        )
        lone += beside_letter
    return lone >= 0.8 * wide


def detect(
    data: bytes, filename: str, declared: str | None = None, *, whole: bool = True
) -> Detected:
    """The MIME type to parse ``data`` as; InvalidInputError if empty, unknown or mislabeled.
    ``whole=False``: ``data`` is a larger file's head (see :func:`sniff`)."""
    family = sniff(data, whole=whole)
    claimed = claimed_type(filename, declared)
    if family in BINARY_TYPES:
        # A photo saved as .jpg that is really a PNG is common and harmless: images are one
        # family, and the content decides which.
        same_family = claimed in IMAGE_TYPES and family in IMAGE_TYPES
        if claimed is not None and claimed != family and not same_family:
            raise InvalidInputError(
                f"the file claims to be {claimed} but its content is {family}",
                filename=filename,
                claimed=claimed,
                detected=family,
            )
        return Detected(family, claimed)
    if claimed in BINARY_TYPES:
        raise InvalidInputError(
            f"the file claims to be {claimed} but its content is text",
            filename=filename,
            claimed=claimed,
            detected=TEXT,
        )
    return Detected(claimed or _guess_text_type(data), claimed)


def _guess_text_type(data: bytes) -> str:
    text = (decode_text(data) or "").lstrip()
    head = text[:2048].lower()
    if text[:1] in "{[":
        try:
            json.loads(text)
        except (ValueError, RecursionError):  # too deep for json: read it as text
            pass
        else:
            return JSON
    if head.startswith(("<!doctype html", "<html")) or ("<body" in head and "</" in head):
        return HTML
    if any(line.startswith(("# ", "## ", "### ")) for line in text[:4096].splitlines()):
        return MARKDOWN
    return TEXT
