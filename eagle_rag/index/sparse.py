"""Client-side BM25 tokenization that treats Chinese and other languages alike on every Milvus.

Milvus Lite only ships the ``standard`` and ``jieba`` analyzers; a server ships more. To get the
same BM25 everywhere, text is tokenized here and each token is written as a letters-only hash
word. The ``standard`` analyzer keeps such words whole on Lite and on a server alike, so Milvus's
BM25 function sees exactly our tokens. Queries go through the same functions.

How text becomes tokens:

- NFKC, then case-folded (so "ß" meets "ss"), and Cyrillic yo read as ie ("ёлка" is "елка");
  Arabic diacritics and tatweel and Hebrew points and cantillation are dropped, as readers do.
- Words are Unicode word characters with their combining marks (Devanagari, Bengali, Tamil...
  vowel signs belong to the word). Han runs are segmented by rjieba in search mode; Hangul and
  kana runs become overlapping character bigrams, as Lucene's CJK analyzer makes them (jieba is
  a Chinese segmenter: it cut Korean into single syllables).
- English words are reduced to their Snowball stem, except an all-caps word of two to four
  letters ("UPS", "IT", "NASA"), which is an acronym: kept as it is and never dropped as a
  function word. A longer word in capitals ("WARNING") is stemmed as in lower case.
- A dotted or hyphenated identifier with a digit ("v3.1.4", "ERR-4021") is one more token beside
  its pieces, so a release or a code matches itself before its siblings.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata
from types import MappingProxyType

import regex
import rjieba
import snowballstemmer

# Word characters and the combining marks (Unicode M) that belong to them; \p{No} keeps the
# numbers ("²", "①") that the standard library's \w also counts as word characters.
_WORD = regex.compile(r"[\w\p{M}\p{No}]+")
_CJK_RUN = re.compile(
    r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)", re.UNICODE
)
# Within a CJK run: Han characters go to jieba, Hangul and kana runs become bigrams.
_HAN_RUN = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)")
# A dotted or hyphenated identifier with a digit: a version, an error code, a model number.
_DIGIT = re.compile(r"\d")
# Possessive: backtracking into every word of a passage made this search cost more than
# finding the words themselves.
_IDENTIFIER = re.compile(r"(?<![\w.\-])[A-Za-z0-9]++(?:[.\-][A-Za-z0-9]++)+(?!\w)")
# Marks a reader leaves out and a writer often does: Arabic harakat, superscript alef and
# tatweel (kashida); Hebrew cantillation and niqqud (not maqaf, paseq, sof pasuq, nun hafukha).
_IGNORED_MARKS = MappingProxyType(
    dict.fromkeys(
        [
            *range(0x064B, 0x0660),
            0x0670,
            0x0640,
            *range(0x0591, 0x05BE),
            0x05BF,
            0x05C1,
            0x05C2,
            0x05C4,
            0x05C5,
            0x05C7,
        ]
    )
)
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_STEMMER = snowballstemmer.stemmer("english")
# A Snowball stemmer keeps its working string on the instance: two threads stemming at once
# (ingest workers upserting while a search tokenizes its query) corrupt each other's word, a
# wrong stem or an IndexError that failed a document's ingest. The cache below keeps the lock rare.
_STEMMER_LOCK = threading.Lock()
# An all-capitals word of at most this many letters is an acronym (_is_acronym).
_ACRONYM_LETTERS = 4
# Milvus VARCHAR limit is 65,535 bytes; each encoded token takes 15 bytes with its space.
MAX_ENCODED_TOKENS = 4000


# Function words of English and Chinese questions, left out of BM25 *queries* (documents keep
# every word, so their lengths and statistics do not change). Each occurs in most documents: its
# IDF, hence its share of a score, is near zero, but Milvus walks its whole posting list on every
# search. Measured on msmarco (5,000 passages, Milvus Lite): a 20-deep BM25 search fell from
# 10.4 to 5.7 ms; BM25 nDCG@10 moved by +0.004 / -0.001 / -0.0004 on msmarco / pubmedqa /
# cmrc2018 (benchmarks/RESULTS.md).
QUERY_STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my no not of on or our so such than that the their them then there these
    they this those to us was we were what when where which who whom whose why will with would
    you your 的 了 是 在 和 与 及 或 也 都 就 而 着 吗 呢 吧 啊 什么 哪 哪些 哪个 哪里 怎么 怎样
    如何 为什么 谁 多少 这 那 这个 那个 被 把 之 其""",
    )
)


def tokenize(text: str, *, query: bool = False) -> list[str]:
    """Case-folded word tokens; Han runs are segmented by jieba in search mode (more recall).

    With ``query``, function words are dropped, unless the query has nothing else."""
    words = _words(text)
    if query:
        words = [w for w in words if not _is_function_word(w)] or words
    return [_token(w) for w in words]


def content_tokens(text: str) -> list[str]:
    """The query tokens of ``text`` that are not function words; none for a text of nothing
    else ("what is it?"), whose BM25 query keeps its function words but whose matches say
    nothing of what it is about."""
    return [_token(w) for w in _words(text) if not _is_function_word(w)]


# A word as found: its folded text, and whether it is kept verbatim (an acronym or an
# identifier: neither stemmed nor dropped as a function word).
_Word = tuple[str, bool]


def _is_function_word(word: _Word) -> bool:
    text, verbatim = word
    return not verbatim and text in QUERY_STOPWORDS


def _token(word: _Word) -> str:
    text, verbatim = word
    return text if verbatim else _stem(text)


def _words(text: str) -> list[_Word]:
    normalized = unicodedata.normalize("NFKC", text).translate(_IGNORED_MARKS)
    words: list[_Word] = []
    for line in normalized.splitlines():
        words.extend(_line_words(line))
    return words


def _line_words(line: str) -> list[_Word]:
    words: list[_Word] = []
    shouting = line.upper() == line  # once a line: per word it made long lines quadratic
    for match in _WORD.finditer(line):
        for piece in _CJK_RUN.split(match.group()):
            if not piece:
                continue
            if _CJK_RUN.fullmatch(piece):
                words.extend((t, False) for t in _cjk_tokens(piece))
            else:  # isupper first: the one test most words need, without a call
                words.extend(
                    (_fold(t), t.isupper() and _is_acronym(t, shouting))
                    for t in piece.split("_")
                    if t
                )
    if _DIGIT.search(line):
        identifiers = (m.group() for m in _IDENTIFIER.finditer(line))
        words.extend((_fold(i), True) for i in identifiers if _DIGIT.search(i))
    return words


def _fold(word: str) -> str:
    """Case-folded ("Straße" is "strasse"), with yo read as ie, as Russian mostly writes it."""
    folded = word.casefold()
    return folded.replace("ё", "е") if "ё" in folded else folded


def _is_acronym(word: str, shouting: bool) -> bool:
    """An all-capital ``word`` of two to four letters ("UPS", "IT", "WHO", "NASA"): an
    acronym, not an English word to stem or drop. A longer one is a word set in capitals for
    emphasis ("WARNING", "IMPORTANT"), stemmed as in lower case. In a line all in capitals
    (``shouting``: a heading, a query typed in capitals) a function word is a word ("WHAT IS
    THE PRICE"), other short words stay acronyms ("IT SERVICES" keeps "SERVICES" a word)."""
    letters = sum(c.isalpha() for c in word)
    if not 2 <= letters <= _ACRONYM_LETTERS:
        return False
    return not (shouting and word.casefold() in QUERY_STOPWORDS)


def _cjk_tokens(run: str) -> list[str]:
    """Han parts segmented by jieba; Hangul and kana parts as overlapping bigrams."""
    tokens: list[str] = []
    for part in _HAN_RUN.split(run):
        if not part:
            continue
        if _HAN_RUN.fullmatch(part):
            tokens.extend(t for t in rjieba.cut_for_search(part) if t.strip())
        else:
            tokens.extend(_bigrams(part))
    return tokens


def _bigrams(run: str) -> list[str]:
    """Overlapping character pairs ("서울대" gives "서울", "울대"); one character stays itself."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


@functools.lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    """English words by their Snowball stem ("patients" and "patient" are one term), as the
    English analyzers of BM25 baselines do: measured on pubmedqa-dev, BM25 nDCG@10 rose from
    0.974 to 0.982 and hybrid from 0.980 to 0.986. Other words are kept as they are."""
    if word.isascii() and word.isalpha() and len(word) > 2:
        with _STEMMER_LOCK:
            return str(_STEMMER.stemWord(word))
    return word


@functools.lru_cache(maxsize=200_000)
def encode_token(token: str) -> str:
    """A 14-letter word from a 64-bit hash of the token: stable across processes and versions.

    Cached: words repeat (Zipf); tokenizing and hashing a passage was about a tenth of the
    CPU of a one-row upsert (py-spy, msmarco)."""
    number = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
    letters = []
    for _ in range(14):
        number, digit = divmod(number, 26)
        letters.append(_ALPHABET[digit])
    return "".join(letters)


def encode_for_bm25(text: str, *, query: bool = False) -> str:
    """The whitespace-joined hash words fed to Milvus's BM25 function (document or query)."""
    tokens = tokenize(text, query=query)[:MAX_ENCODED_TOKENS]
    return " ".join(encode_token(t) for t in tokens)
