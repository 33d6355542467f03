"""Client-side BM25 tokenization that treats Chinese and other languages alike on every Milvus.

Milvus Lite only ships the ``standard`` and ``jieba`` analyzers; a server ships more. To get the
same BM25 everywhere, text is tokenized here (rjieba for CJK runs, Unicode words for the rest,
NFKC + lower-case, English words reduced to their Snowball stem) and each token is written as a
letters-only hash word. The ``standard``
analyzer keeps such words whole on Lite and on a server alike, so Milvus's BM25 function sees
exactly our tokens. Queries go through the same two functions.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata

import rjieba
import snowballstemmer

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_RUN = re.compile(
    r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)", re.UNICODE
)
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_STEMMER = snowballstemmer.stemmer("english")
# A Snowball stemmer keeps its working string on the instance: two threads stemming at once
# (ingest workers upserting while a search tokenizes its query) corrupt each other's word, a
# wrong stem or an IndexError that failed a document's ingest. The cache below keeps the lock rare.
_STEMMER_LOCK = threading.Lock()
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
    """Lower-cased word tokens; CJK runs are segmented by jieba in search mode (more recall).

    With ``query``, function words are dropped, unless the query has nothing else."""
    words = _words(text)
    if query:
        words = [w for w in words if w not in QUERY_STOPWORDS] or words
    return [_stem(w) for w in words]


def content_tokens(text: str) -> list[str]:
    """The query tokens of ``text`` that are not function words; none for a text of nothing
    else ("what is it?"), whose BM25 query keeps its function words but whose matches say
    nothing of what it is about."""
    return [_stem(w) for w in _words(text) if w not in QUERY_STOPWORDS]


def _words(text: str) -> list[str]:
    normalized = unicodedata.normalize("NFKC", text).lower()
    words: list[str] = []
    for match in _WORD.finditer(normalized):
        for piece in _CJK_RUN.split(match.group()):
            if not piece:
                continue
            if _CJK_RUN.fullmatch(piece):
                words.extend(t for t in rjieba.cut_for_search(piece) if t.strip())
            else:
                words.extend(t for t in piece.split("_") if t)
    return words


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
