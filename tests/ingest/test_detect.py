from __future__ import annotations

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from tests.ingest import documents as docs


def _encrypted_office() -> bytes:
    """The head of a password-protected .xlsx (MS-OFFCRYPTO): an OLE compound file whose
    directory names the EncryptionInfo and EncryptedPackage streams."""
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16) + b"\x3e\x00\x03\x00\xfe\xff\x09\x00"
    header = header.ljust(512, b"\x00")

    def entry(name: str, kind: int) -> bytes:
        encoded = (name + "\x00").encode("utf-16-le")
        head = encoded.ljust(64, b"\x00") + len(encoded).to_bytes(2, "little") + bytes([kind])
        return head.ljust(128, b"\x00")

    directory = entry("Root Entry", 5) + entry("EncryptionInfo", 2) + entry("EncryptedPackage", 2)
    return header + directory.ljust(512, b"\x00") + bytes(4096)


@pytest.mark.parametrize(
    ("data", "filename", "expected"),
    [
        (docs.pdf_bytes(), "report.pdf", d.PDF),
        (docs.pdf_bytes(), "no-extension", d.PDF),
        (docs.docx_bytes(), "handbook.docx", d.DOCX),
        (docs.pptx_bytes(), "deck.bin", d.PPTX),
        (docs.xlsx_bytes(), "sales.xlsx", d.XLSX),
        (docs.MARKDOWN.encode(), "guide.md", d.MARKDOWN),
        (docs.MARKDOWN.encode(), "guide", d.MARKDOWN),
        (docs.HTML.encode(), "page", d.HTML),
        (docs.JSON_DOC.encode(), "data", d.JSON),
        (b"a,b\n1,2\n", "table.csv", d.CSV),
        ("plain words".encode("gb18030"), "notes.txt", d.TEXT),
        ("北京大学".encode("utf-16"), "utf16.txt", d.TEXT),
        # Nested deeper than json reads: text, not a crash of the upload.
        (("[" * 50_000 + "]" * 50_000).encode(), "deep", d.TEXT),
    ],
)
def test_types_are_detected_from_content(data: bytes, filename: str, expected: str) -> None:
    assert d.detect(data, filename).mime_type == expected


@pytest.mark.parametrize(
    ("data", "filename", "match"),
    [
        (b"", "empty.txt", "empty"),
        (b"plain text", "fake.pdf", "claims to be application/pdf but its content is text"),
        (
            docs.pdf_bytes(),
            "report.docx",
            "claims to be .*wordprocessingml.* but its content is application/pdf",
        ),
        (docs.docx_bytes(), "handbook.xlsx", "but its content is .*wordprocessingml"),
        (b"\x89PNG\r\n\x1a\n0000", "photo.png", "the image is corrupt"),
        (b"GIF89a" + b"0" * 32, "anim.gif", "unsupported file type: image/gif"),
        (b"PK\x03\x04garbage", "x.docx", "corrupt zip"),
        (b"\x00\x01\x02\x03" * 100, "blob.txt", "binary data"),
        (b"\xd0\xcf\x11\xe0legacy", "old.doc", "legacy Office file .* or a password-protected"),
        # Was "application/msword (legacy OLE format)" for a password-protected budget.xlsx.
        (_encrypted_office(), "budget.xlsx", "password-protected Office document"),
    ],
)
def test_empty_mislabeled_and_unsupported_files_are_refused(
    data: bytes, filename: str, match: str
) -> None:
    with pytest.raises(InvalidInputError, match=match):
        d.detect(data, filename)


def test_declared_type_is_checked_like_a_name() -> None:
    assert d.detect(b"# Title\n", "x", "text/markdown").mime_type == d.MARKDOWN
    with pytest.raises(InvalidInputError, match="claims"):
        d.detect(b"hello", "x", "application/pdf")
    # a generic declaration does not override the content
    assert d.detect(docs.pdf_bytes(), "x", "application/octet-stream").mime_type == d.PDF


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("name,city\nMüller,Zürich\nGöbel,Köln\n", "latin-1"),  # valid GB18030 pairs too
        ("José Müller lives in Zürich.\n", "latin-1"),  # not GB18030: was "binary data"
        ("The memo’s “quotes” — and more.\n", "cp1252"),
        ("知识库中没有找到与问题相关的内容。Python 3 和 GB18030。\n", "gb18030"),
        ("北京 A股 and B股 2024\n", "gb18030"),
    ],
)
def test_text_is_read_in_its_own_encoding(text: str, encoding: str) -> None:
    """Latin-1 read as GB18030 turned "Müller" into "M黮ler" and searches missed it."""
    assert d.decode_text(text.encode(encoding)) == text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("東京大学の研究者は新しい触媒を開発しました。", "shift_jis"),
        ("こんにちは、世界。", "cp932"),
        ("서울대학교 연구팀은 새로운 배터리 기술을 개발했습니다.", "euc-kr"),
        ("안녕하세요 여러분", "cp949"),
        ("Учёные из Новосибирска создали новый аккумулятор.", "koi8-r"),
        ("Привет, мир!", "koi8-r"),
        ("اكتشف العلماء في جامعة القاهرة دواء جديدا لعلاج مرض السكري.", "windows-1256"),
        ("مرحبا بالعالم", "windows-1256"),
    ],
)
def test_text_in_a_legacy_charset_of_its_language_is_read_in_it(text: str, encoding: str) -> None:
    """Shift_JIS and EUC-KR were read as GB18030, KOI8-R and Windows-1256 as Windows-1252:
    stored as mojibake, without a warning."""
    assert d.decode_text(text.encode(encoding)) == text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("北京", "gb18030"),
        ("中心上", "gb18030"),
        ("格股票公", "gb18030"),
        ("中华人民", "gb18030"),
        ("脑手机朋友", "gb18030"),
        ("北京大学的科学家发现了一种新的超导材料。", "gb18030"),
        ("Café", "cp1252"),
        ("à la carte, très bien", "cp1252"),
        ("Größe über Äpfel", "cp1252"),
        ("Señor José", "cp1252"),
        ("Århus, Ærø og søster", "latin-1"),
    ],
)
def test_short_chinese_and_latin_text_is_not_taken_for_a_legacy_charset(
    text: str, encoding: str
) -> None:
    """A few Chinese characters can read as Hangul, Cyrillic or Arabic letters by chance."""
    assert d.decode_text(text.encode(encoding)) == text


def test_utf8_text_with_a_stray_byte_keeps_its_other_characters() -> None:
    data = "Café crème, naïve résumé. ".encode() * 40 + b"It\x92s here.\n"
    decoded = d.decode_text(data)
    assert decoded is not None
    assert decoded.startswith("Café crème") and decoded.endswith("It\ufffds here.\n")
