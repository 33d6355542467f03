"""The offline answer: the best sentences of the top sources, each with its real ``[n]``.

No model is needed: sentences of the references are scored by how many of the question's terms
they contain (Chinese segmented with jieba, as BM25 is), earlier references winning ties, and the
best few are returned in reference order, each followed by the citation of its source. When no
sentence shares a term with the question the answer says so and points at the top source.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

from eagle_rag.generation.prompt import Language, Reference
from eagle_rag.index.sparse import tokenize
from eagle_rag.models.chat import GenerationInput

MAX_SENTENCES = 3
# A sentence sharing fewer than this share of the best sentence's question terms is padding:
# "电池柜的环境温度应保持在多少" quoted every sentence that merely contains "应" (should).
MIN_SHARE_OF_BEST = 0.5
# A sentence ends at . ! ? followed by a space (not inside "4.2", "3.0 kW", "v1.5") or at a
# Chinese stop, which needs no space after it.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_NO_SOURCES = {
    "zh": "知识库中没有找到与问题相关的内容。",
    "en": "The knowledge base has no passage about this question.",
}
_NO_MATCH = {
    "zh": "资料中没有直接回答这个问题的内容。最相关的段落是：",
    "en": "The documents do not answer this directly. The closest passage says:",
}


class ExtractiveGenerator:
    """A ChatModel that needs no model: extractive, cited, deterministic."""

    name = "extractive"

    async def stream(self, job: GenerationInput) -> AsyncIterator[str]:
        language: Language = "zh" if job.language == "zh" else "en"
        answer = compose(job.question, list(job.references), language)
        for piece in re.findall(r"\S+\s*", answer) if language == "en" else _runs(answer):
            yield piece


# "How long / many / much …" asks for an amount: the word says what kind of answer, not what
# about ("How long is the warranty?" quoted "Long names are fine." for sharing "long").
_ASKING_FOR = re.compile(r"\bhow\s+(long|many|much|often|far|old|soon|big|large|tall)\b", re.I)


def compose(question: str, references: Sequence[Reference], language: Language) -> str:
    if not references:
        return _NO_SOURCES[language]
    terms = _question_terms(question)
    scored: list[tuple[int, int, int, str, int]] = []  # hits, rank, position, sentence, [n]
    for rank, ref in enumerate(references):
        for position, sentence in enumerate(_sentences(ref.text)):
            hits = len(terms & set(tokenize(sentence)))
            if hits:
                scored.append((hits, rank, position, sentence, ref.index))
    joiner = "" if language == "zh" else " "
    if not scored:
        first = _sentences(references[0].text)[:2]
        return f"{_NO_MATCH[language]}{joiner}{joiner.join(first)} [{references[0].index}]"
    most = max(s[0] for s in scored)
    kept = [s for s in scored if s[0] >= most * MIN_SHARE_OF_BEST]
    best = sorted(kept, key=lambda s: (-s[0], s[1]))[:MAX_SENTENCES]  # earlier sources win ties
    best.sort(key=lambda s: (s[1], s[2]))  # read in document order
    return joiner.join(f"{sentence} [{index}]" for _, _, _, sentence, index in best)


def _question_terms(question: str) -> set[str]:
    terms = set(tokenize(question, query=True))
    asking = {t for m in _ASKING_FOR.finditer(question) for t in tokenize(m.group(1))}
    return terms - asking or terms  # "How long?" alone keeps its one word


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def _runs(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
