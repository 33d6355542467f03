"""Decode an HTML page by the charset it declares in a ``<meta>`` tag, else by detection.

A byte order mark wins (it cannot be wrong about itself), and valid UTF-8 (see below); then
``<meta charset>`` or ``<meta http-equiv="Content-Type" content="...; charset=...">`` in the
page's head; then :func:`~eagle_rag.ingest.detect.decode_text`'s guess, which took Shift_JIS
for GB18030 and Windows-1251 for Windows-1252 (it now knows Shift_JIS, EUC-KR, KOI8-R and
Windows-1256 text by its language, not Windows-1251). The charset of a fetched page's HTTP
``Content-Type``, which outranks the page's own declaration, is applied when the page is fetched
(:func:`eagle_rag.ingest.http_charset.as_declared_utf8`).
"""

from __future__ import annotations

import codecs
import re

from eagle_rag.ingest.detect import decode_text

# Browsers look for the declaration in the first 1024 bytes; pages that open with a long
# comment or script put it later, and the head is still cheap to search.
HEAD_BYTES = 4096
_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([a-z0-9._:-]+)", re.I)
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# Labels whose web meaning is a superset of Python's codec of that name (the WHATWG Encoding
# standard's mapping): pages labelled Shift_JIS are written in Windows' extension of it.
_WEB_CODECS = {
    "shift_jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "big5": "big5hkscs",
}
# Codecs Python knows that no web page is written in: escapes and domain-name transforms.
_NOT_PAGE_CODECS = ("utf-16", "utf-32", "idna", "punycode", "unicode-escape", "raw-unicode")


def decode_html(data: bytes) -> str | None:
    """The page's text (None for binary data): a BOM, then a declared charset, then a guess."""
    if data.startswith(_BOMS) or b"\x00" in data[:8192]:
        return decode_text(data)
    try:
        # Text in a legacy charset is almost never valid UTF-8, while a page re-saved as UTF-8
        # often keeps its old declaration: there the declaration is what is wrong.
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    codec = declared_codec(data[:HEAD_BYTES])
    if codec is not None:
        text = decode_as(data, codec)
        if text is not None:
            return text
    return decode_text(data)


def declared_codec(head: bytes) -> str | None:
    """The Python codec of the first ``<meta>`` charset in ``head``; None for a name Python
    does not know or no page is written in (a UTF-16 label is wrong: the head read as ASCII)."""
    found = _META_CHARSET.search(head)
    return None if found is None else codec_for_label(found.group(1).decode("ascii"))


def codec_for_label(label: str) -> str | None:
    """The Python codec for a web charset label, or None (unknown, or no page's codec)."""
    label = label.strip().strip("\"'").lower()
    try:
        name = codecs.lookup(_WEB_CODECS.get(label, label)).name
    except LookupError:
        return None
    return None if name.replace("_", "-").startswith(_NOT_PAGE_CODECS) else name


def decode_as(data: bytes, codec: str) -> str | None:
    """``data`` in ``codec``; a few undecodable bytes become U+FFFD (a page is often pasted
    together), but a declaration most of the page contradicts is ignored."""
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        text = data.decode(codec, errors="replace")
    except (LookupError, UnicodeError):  # a bytes-to-bytes codec (base64, rot13), "undefined"
        return None
    return text if text.count("\ufffd") <= max(1, len(text) // 1000) else None
