"""Each page of one document as one unit of text, ranked for a question by BM25.

Chunks are the right unit to cite, but a page is often the right unit to *find*: a question's
words may be spread over a page's table rows, its caption and the paragraph beside it, with no
single chunk holding most of them (a filing's balance sheet, a slide, a manual's spec page).
Page search therefore also ranks the document's pages as whole texts, rebuilt from the stored
chunks that print on each page (section summaries left out: they quote a whole section), with
the same tokenizer and BM25 (k1 1.2, b 0.75) as the index, IDF over the document's own pages.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.index.filters import all_of, eq, ne
from eagle_rag.index.sparse import tokenize
from eagle_rag.retrieval.expansion import SUMMARY

K1, B = 1.2, 0.75
# Milvus answers at most this many rows per query: a document with more chunks is ranked on
# the pages of its first ones (a 468-page manual stores ~4,000).
MAX_CHUNKS = 16384


def page_texts(rows: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """Page number → the text of the chunks printed on it, in reading order (a chunk that
    crosses a page break counts on each of its pages)."""
    ordered = sorted(rows, key=lambda r: int(r.get("chunk_index") or 0))
    parts: dict[int, list[str]] = {}
    for row in ordered:
        for page in dict.fromkeys(int(p) for p in row.get("page_nums") or ()):
            parts.setdefault(page, []).append(str(row.get("text") or ""))
    return {page: "\n".join(texts) for page, texts in parts.items()}


def rank_page_texts(pages: Mapping[int, str], query: str, *, limit: int) -> list[int]:
    """The pages holding any of the query's terms, best BM25 score first (ties: earlier page)."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    terms = set(tokenize(query, query=True))
    if not pages or not terms:
        return []
    counts = {page: Counter(tokenize(text)) for page, text in pages.items()}
    lengths = {page: sum(c.values()) for page, c in counts.items()}
    average = (sum(lengths.values()) / len(lengths)) or 1.0
    scores: dict[int, float] = {}
    for term in terms:
        holding = [page for page, c in counts.items() if term in c]
        if not holding:
            continue
        idf = math.log(1 + (len(counts) - len(holding) + 0.5) / (len(holding) + 0.5))
        for page in holding:
            tf = counts[page][term]
            norm = tf + K1 * (1 - B + B * lengths[page] / average)
            scores[page] = scores.get(page, 0.0) + idf * tf * (K1 + 1) / norm
    return sorted(scores, key=lambda p: (-scores[p], p))[:limit]


def document_page_texts(vectors: Any, *, document_id: str, kb_name: str) -> dict[int, str]:
    """The document's page texts from its stored text chunks (blocking: run it in a thread)."""
    where = all_of(eq("document_id", document_id), eq("kb_name", kb_name), ne("type", SUMMARY))
    rows: Sequence[Mapping[str, Any]] = vectors.query(
        TEXT_COLLECTION,
        where,
        output_fields=["text", "page_nums", "chunk_index"],
        limit=MAX_CHUNKS,
    )
    return page_texts(rows)
