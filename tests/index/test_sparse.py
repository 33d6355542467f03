from __future__ import annotations

import random
import re
import string
import sys
import threading

import snowballstemmer
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.index import sparse
from eagle_rag.index.sparse import MAX_ENCODED_TOKENS, encode_for_bm25, encode_token, tokenize


def test_english_is_lowercased_stemmed_words() -> None:
    assert tokenize("Reciprocal Rank-Fusion, k=60!") == ["reciproc", "rank", "fusion", "k", "60"]
    # Inflections meet on one term, so BM25 matches "patients" with "patient".
    assert tokenize("Patients treated") == tokenize("patient treating")
    assert tokenize("is ok Åland") == ["is", "ok", "åland"]  # short and non-ASCII words kept


def test_queries_leave_out_function_words_documents_keep_them() -> None:
    assert tokenize("What is the cost of a concrete floor?", query=True) == [
        "cost",
        "concret",
        "floor",
    ]
    assert tokenize("What does the cost include", query=True) == ["cost", "includ"]
    assert tokenize("什么是向量数据库", query=True) == tokenize("向量数据库")
    assert tokenize("the cost of a floor")[:3] == ["the", "cost", "of"]
    # A query of nothing else keeps them: "The Who" must still find the band.
    assert tokenize("The Who", query=True) == ["the", "who"]
    assert encode_for_bm25("the floor", query=True) == encode_token("floor")


def test_chinese_is_segmented_with_search_mode() -> None:
    tokens = tokenize("北京大学的学生")
    assert {"北京", "大学", "北京大学", "学生"} <= set(tokens)


def test_mixed_scripts_split_at_the_script_boundary() -> None:
    assert tokenize("Milvus向量数据库")[:1] == ["milvus"]
    assert "数据库" in tokenize("Milvus向量数据库")


def test_fullwidth_forms_are_normalised() -> None:
    assert tokenize("ＡＢＣ１２３") == ["abc123"]


def test_encoding_is_letters_only_and_stable() -> None:
    word = encode_token("北京")
    assert re.fullmatch(r"[a-z]{14}", word)
    assert word == encode_token("北京") != encode_token("上海")
    # Pinned: a change here would silently invalidate every stored BM25 vector.
    assert encode_token("eagle") == "vbgrgzadjmfywa"


@given(st.text(max_size=300))
def test_encoded_text_has_one_word_per_token(text: str) -> None:
    encoded = encode_for_bm25(text)
    assert len(encoded.split()) == min(len(tokenize(text)), MAX_ENCODED_TOKENS)
    assert re.fullmatch(r"([a-z]{14}( [a-z]{14})*)?", encoded)


def test_very_long_text_is_capped() -> None:
    assert len(encode_for_bm25("word " * 10_000).split()) == MAX_ENCODED_TOKENS


def test_stemming_from_many_threads_at_once_gives_each_word_its_own_stem() -> None:
    """Ingest workers and searches tokenize concurrently; a shared Snowball stemmer without a
    lock mixed their words up (an IndexError failed one SciFact abstract's ingest)."""
    rng = random.Random(7)
    words = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10))) + "ations"
        for _ in range(40_000)
    ]
    errors: list[BaseException] = []
    results: dict[str, str] = {}

    def stem_all(part: list[str]) -> None:
        try:
            results.update((w, sparse._stem.__wrapped__(w)) for w in part)
        except Exception as exc:  # the race shows as an IndexError or a wrong stem
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows at once
    try:
        threads = [threading.Thread(target=stem_all, args=(words[i::4],)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    reference = snowballstemmer.stemmer("english")
    assert all(results[w] == reference.stemWord(w) for w in words)
