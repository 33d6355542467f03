"""Recognise text in the legacy one-language charsets that GB18030 and Windows-1252 misread.

Shift_JIS and EUC-KR text decodes as GB18030 without an error, and KOI8-R or Windows-1256 text
as Windows-1252: every byte means something in each of them. So a charset is taken only when
its reading looks like the language it was made for, and short texts stay with the old guess:
a Chinese word of two or three characters can read as a few Hangul syllables or Cyrillic letters
by chance.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable

# The language is judged on the file's head: the Python-level checks would cost seconds on a
# large file, and a head this long says it as well as the whole.
SAMPLE_BYTES = 65_536
# Fewer letters, or a single word, cannot tell a language from chance (a few Chinese characters
# read as KOI8-R can make one all-lowercase "word"); Chinese puts no spaces between its words.
MIN_LETTERS = 6
MIN_HANGUL = 4
MIN_WORDS = 2
# Share of a Korean text's syllables among the common ones below: Korean text is over half
# common syllables; Chinese read as EUC-KR gives syllables spread over all 2,350.
COMMON_HANGUL_SHARE = 0.25
_COMMON_HANGUL = frozenset(
    "이다의는에하고을가로지사기한서대리자도를인어시아수해나정있으전그부구소스일적상우주제"
    "장국보라들여오것니동성면과요만게원문행화까러었했습학생연개발새운술내트업경때저무신은교"
)
# Japanese text writes its grammar in kana: a Shift_JIS reading without it is a guess.
MIN_KANA_SHARE = 0.2
_WORD = re.compile(r"[^\W\d_]+")  # a run of letters
_INVISIBLE = frozenset("\u200c\u200d\u200e\u200f\xa0")


def legacy_reading(data: bytes) -> tuple[str, str] | None:
    """``data`` read as Shift_JIS, EUC-KR, KOI8-R or Windows-1256 when that reading is
    plausibly Japanese, Korean, Russian or Arabic, with the codec's name; else None."""
    head, whole = data[:SAMPLE_BYTES], len(data) <= SAMPLE_BYTES
    for encoding, plausible in _CHARSETS:
        try:
            # A cut through a two-byte character at the head's end is held back, not an error.
            if plausible(codecs.getincrementaldecoder(encoding)().decode(head, final=whole)):
                return encoding, data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return None


def _japanese(text: str) -> bool:
    wide = [ch for ch in text if not ch.isascii()]
    kana = sum(1 for ch in wide if "\u3041" <= ch <= "\u30ff")
    # Chinese read as Shift_JIS falls on its one-byte half-width katakana.
    halfwidth = any("\uff61" <= ch <= "\uff9f" for ch in wide)
    return not halfwidth and kana >= 2 and kana >= MIN_KANA_SHARE * len(wide)


def _korean(text: str) -> bool:
    letters = [ch for ch in text if not ch.isascii() and ch.isalpha()]
    hangul = [ch for ch in letters if "\uac00" <= ch <= "\ud7a3"]
    common = sum(1 for ch in hangul if ch in _COMMON_HANGUL)
    return (
        _words_with(text, "\uac00", "\ud7a3") >= MIN_WORDS
        and len(hangul) >= MIN_HANGUL
        and len(hangul) >= 0.9 * len(letters)
        and common >= COMMON_HANGUL_SHARE * len(hangul)
    )


def _russian(text: str) -> bool:
    """Cyrillic words only, each in one case or capitalised; no box drawing (the KOI8-R reading
    of most other bytes), and more Cyrillic letters than Latin ones."""
    if any(not ch.isascii() and not ch.isalpha() and ch not in _INVISIBLE for ch in text):
        return False
    cyrillic = latin = 0
    for word in _WORD.findall(text):
        if word.isascii():
            latin += len(word)
            continue
        if not all("\u0400" <= ch <= "\u04ff" for ch in word):
            return False  # Cyrillic mixed with other letters in one word
        if not (word.islower() or word.isupper() or word.istitle()):
            return False
        cyrillic += len(word)
    enough = _words_with(text, "\u0400", "\u04ff") >= MIN_WORDS and cyrillic >= MIN_LETTERS
    return enough and cyrillic >= latin


def _arabic(text: str) -> bool:
    """Arabic script only outside ASCII (Windows-1256's accented Latin letters and symbols are
    what other text reads as), and more Arabic letters than Latin ones."""
    arabic = latin = 0
    for ch in text:
        if ch.isascii():
            latin += ch.isalpha()
        elif "\u0600" <= ch <= "\u06ff":
            arabic += ch.isalpha()
        elif ch not in _INVISIBLE:
            return False
    enough = _words_with(text, "\u0600", "\u06ff") >= MIN_WORDS and arabic >= MIN_LETTERS
    return enough and arabic >= latin


def _words_with(text: str, first: str, last: str) -> int:
    """How many space-separated words hold a character of the block ``first``..``last``."""
    return sum(1 for word in text.split() if any(first <= ch <= last for ch in word))


_CHARSETS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("cp932", _japanese),  # Shift_JIS as Windows writes it
    ("cp949", _korean),  # EUC-KR as Windows writes it
    ("koi8_r", _russian),
    ("cp1256", _arabic),
)
