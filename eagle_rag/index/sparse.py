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
import unicodedata

import rjieba
import snowballstemmer

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_RUN = re.compile(
    r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)", re.UNICODE
)
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_STEMMER = snowballstemmer.stemmer("english")
# Milvus VARCHAR limit is 65,535 bytes; each encoded token takes 15 bytes with its space.
MAX_ENCODED_TOKENS = 4000


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; CJK runs are segmented by jieba in search mode (more recall)."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = []
    for match in _WORD.finditer(normalized):
        for piece in _CJK_RUN.split(match.group()):
            if not piece:
                continue
            if _CJK_RUN.fullmatch(piece):
                tokens.extend(t for t in rjieba.cut_for_search(piece) if t.strip())
            else:
                tokens.extend(_stem(t) for t in piece.split("_") if t)
    return tokens


@functools.lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    """English words by their Snowball stem ("patients" and "patient" are one term), as the
    English analyzers of BM25 baselines do: measured on pubmedqa-dev, BM25 nDCG@10 rose from
    0.974 to 0.982 and hybrid from 0.980 to 0.986. Other words are kept as they are."""
    if word.isascii() and word.isalpha() and len(word) > 2:
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


def encode_for_bm25(text: str) -> str:
    """The whitespace-joined hash words fed to Milvus's BM25 function (document or query)."""
    tokens = tokenize(text)[:MAX_ENCODED_TOKENS]
    return " ".join(encode_token(t) for t in tokens)
