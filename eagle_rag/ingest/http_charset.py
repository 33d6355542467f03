"""Apply the charset a server declares for a fetched text page.

A page's HTTP ``Content-Type: text/html; charset=windows-1251`` is how many servers say what
the bytes are, with nothing in the page itself; and where the page also has a ``<meta>``
charset, the header wins (HTML's encoding sniffing puts it first). The pipeline keeps only the
MIME type of a fetched page, so the declared charset is applied at fetch time: the body is
stored as UTF-8 with a byte order mark, which every text parser reads first and no ``<meta>``
outranks.
"""

from __future__ import annotations

import codecs
from email.message import Message

from eagle_rag.errors import EagleError
from eagle_rag.ingest.detect import TEXT, sniff
from eagle_rag.ingest.parsers.html_charset import codec_for_label, decode_as

# Text bodies a declared charset applies to; a binary format's "charset" means nothing.
_TEXT_TYPES = ("text/", "application/xhtml+xml", "application/json")
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def as_declared_utf8(data: bytes, content_type: str | None) -> bytes:
    """``data`` re-encoded as UTF-8 (with a BOM) when ``content_type`` declares the charset
    of a text body in another encoding; else ``data`` unchanged. A body that is already UTF-8
    or opens with a BOM, or that the declared charset does not fit, is left as it came; so is
    one that is no text whatever its header says (servers label unknown files
    ``text/plain; charset=ISO-8859-1``, and Latin-1 fits every byte of a PDF)."""
    codec = _declared_codec(content_type)
    if codec is None or codec == "utf-8" or data.startswith(_BOMS) or not _is_text(data):
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        text = decode_as(data, codec)
        return data if text is None else codecs.BOM_UTF8 + text.encode("utf-8")
    return data  # valid UTF-8 (ASCII too): a legacy charset's reading would be the same or wrong


def _is_text(data: bytes) -> bool:
    try:
        return sniff(data, whole=False) == TEXT
    except EagleError:  # empty or binary: detection refuses it later, with its own reason
        return False


def _declared_codec(content_type: str | None) -> str | None:
    if not content_type:
        return None
    header = Message()
    header["content-type"] = content_type
    if not header.get_content_type().startswith(_TEXT_TYPES):
        return None
    label = header.get_param("charset")
    return codec_for_label(label) if isinstance(label, str) else None
