"""The offline answer: the best sentences of the top sources, each with its real ``[n]``.

No model is needed: sentences of the references are scored by how many of the question's terms
they contain (Chinese segmented with jieba, as BM25 is), earlier references winning ties; a
sentence whose matched terms are only part of a better one's is left out (it is about something
else: another plant's table, another article); the best few are returned in reference order,
each followed by the citation of its source. When no
sentence shares a term with the question the answer says so and points at the top source.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from eagle_rag.generation.headings import split_headings
from eagle_rag.generation.prompt import Language, Reference
from eagle_rag.generation.tables import split_tables
from eagle_rag.index.sparse import content_tokens, tokenize
from eagle_rag.models.chat import GenerationInput
from eagle_rag.sentence_ends import QUESTION_MARKS, SPACED_STOPS, SPACELESS_STOPS

MAX_SENTENCES = 3
# A sentence sharing fewer than this share of the best sentence's question terms is padding:
# "电池柜的环境温度应保持在多少" quoted every sentence that merely contains "应" (should).
MIN_SHARE_OF_BEST = 0.5
# A word of the question a follow-up continues counts this much of one of its own: it only
# breaks ties between sentences that match the follow-up alike.
TOPIC_WEIGHT = 0.1
# A sentence ends at a Chinese full stop (。！？), a danda (।), an Arabic question mark (؟) and the
# like (eagle_rag/sentence_ends.py), or at . ! ? followed by a space or the end: a
# point inside a token is no end ("4.7 million", "firmware 9.3(12)", "192.168.8.1", "e.g."
# would each quote half a sentence and lose the number the question asked for). Closing quotes
# and brackets right after the stop belong to the sentence they close.
_CLOSERS = "[\"'”’)）\\]」』*_]*"  # quotes, brackets and Markdown emphasis a stop may close
_SENTENCE_END = re.compile(
    rf"(?<=[{SPACELESS_STOPS}]){_CLOSERS}|(?<=[{SPACED_STOPS}]){_CLOSERS}(?=\s|$)"
)
# Nor does a stop inside brackets or quotes end a sentence when they close soon after: the title
# 《卡拉OK.LIVE！‧台北‧我》 and "(… Hey! Say! JUMP)" were quoted cut at their "!".
_CLOSING = {"《": "》", "「": "」", "『": "』", "（": "）", "(": ")", "“": "”", "【": "】"}
MAX_BRACKETED = 200  # characters; a bracket left open longer than that is a typo, not a title
# A sentence that asks ("**Q: Can I install it myself?**") is the question an FAQ answers.
_ASKS = re.compile(rf"[{QUESTION_MARKS}]{_CLOSERS}\s*$")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_WORDS = re.compile(r"\w+")
# A code: letters and digits in one token, maybe joined by a hyphen ("F9", "SX-5000", "R32",
# "COVID-19", "5G"), not a plain number or word; whole with the dotted or hyphenated parts
# after it ("v3.1.4", "SX-5000-B"): "v3" alone is named by every 3.x release's notes.
_CODE = re.compile(
    r"(?<![A-Za-z0-9])(?:[A-Za-z]+-?\d+[A-Za-z0-9]*|\d+[A-Za-z]+[A-Za-z0-9]*)"
    r"(?:[.-][A-Za-z0-9]+)*(?![A-Za-z0-9])"
)
# A line that ends as a sentence does.
_ENDS = re.compile(rf"[{SPACED_STOPS}{SPACELESS_STOPS}]{_CLOSERS}$")
# "1." or "b." alone is the marker of a list item, not a sentence: the item starts with it.
_LIST_MARKER = re.compile(r"\s*(\d{1,3}|[a-zA-Z])[.)]\s*$")
# Title and reference abbreviations that end with a point but do not end a sentence.
_ABBREVIATIONS = frozenset(
    re.findall(r"\S+", "dr mr mrs ms prof vs etc e.g i.e fig figs eq approx inc ltd jr sr")
)
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
        answer = compose(job.question, list(job.references), language, searched=job.searched)
        for piece in re.findall(r"\S+\s*", answer) if language == "en" else _runs(answer):
            yield piece


# "How long / many / much …" asks for an amount: the word says what kind of answer, not what
# about ("How long is the warranty?" quoted "Long names are fine." for sharing "long").
_ASKING_FOR = re.compile(r"\bhow\s+(long|many|much|often|far|old|soon|big|large|tall)\b", re.I)


def compose(
    question: str, references: Sequence[Reference], language: Language, *, searched: str = ""
) -> str:
    """The answer to ``question`` from the best sentences of ``references``, cited.

    ``searched`` is what they were searched with when a follow-up was joined to the question it
    follows ("What is the refrigerant charge of the HP-12? and what does fault F9 mean?"): the
    sentences are picked for the question as asked, the earlier one's words only breaking ties
    between them ("and in 2021?" quotes the 2021 row of the plant asked about before). Picked
    for the joined text, the answer was about the first question. A follow-up with no word of
    its own ("why?") is answered for the joined text.
    """
    if not references:
        return _NO_SOURCES[language]
    terms = _question_terms(question)
    topic = _question_terms(searched) - terms if searched else set()
    if not terms:
        terms, topic = topic, set()
    asked = _Asked.of(question)
    scored: list[_Scored] = []
    for rank, ref in enumerate(references):
        for position, (sentence, heading) in enumerate(_sentences(ref)):
            said = frozenset(tokenize(sentence))
            words = said | heading
            hits = frozenset(terms & words)
            if hits:
                about = hits | (topic & words)
                score = len(hits) + TOPIC_WEIGHT * len(topic & words) - rank * 0.01
                echo = asked.echoed_by(sentence)
                scored.append(
                    _Scored(score, rank, position, sentence, ref, hits, about, echo, heading, said)
                )
    # A line that only echoes the question is quoted only when nothing else matches.
    scored = [s for s in scored if not s.echo] or scored
    joiner = "" if language == "zh" else " "
    if not scored:
        # A source of headings only has no sentence to quote: its text, flattened, stands in.
        top = references[0]
        first = [s for s, _ in _sentences(top)][:2] or [" ".join(top.text.split()).lstrip("# ")]
        return f"{_NO_MATCH[language]}{joiner}{joiner.join(first)} [{top.index}]"
    most = max(len(s.hits) for s in scored)
    enough = [s for s in scored if len(s.hits) >= most * MIN_SHARE_OF_BEST]
    enough = _from_sources_naming_the_codes(enough, question)
    best = _adding_something(sorted(enough, key=lambda s: -s.score))[:MAX_SENTENCES]
    best.sort(key=lambda s: (s.rank, s.position))  # read in document order
    return joiner.join(f"{s.sentence} [{s.reference.index}]" for s in best)


@dataclass(frozen=True, slots=True)
class _Scored:
    score: float
    rank: int
    position: int
    sentence: str
    reference: Reference
    hits: frozenset[str]  # the question's words it has
    about: frozenset[str]  # those and the earlier question's (a follow-up's topic)
    echo: bool  # a line that only repeats the question (_Asked.echoed_by)
    heading: frozenset[str]  # the words of the heading it stands under
    said: frozenset[str]  # the words of the sentence itself


def _from_sources_naming_the_codes(candidates: list[_Scored], question: str) -> list[_Scored]:
    """When the question names a code (a model, a fault, a part: "F9", "SX-5000", "E-34") and
    some source names it too, only those sources' sentences. "What does fault F9 mean?" also
    quoted the inverter manual's "Fault code E-34 means…": it shares "fault" and "mean", as many
    as the F9 sentence does. The test is on the whole source, not the sentence: "It weighs
    17 kg" answers for the SX-5000 its manual is about."""
    codes = [frozenset(tokenize(code)) for code in _CODE.findall(question)]
    codes = [code for code in codes if code]
    if not codes:
        return candidates
    naming: dict[int, bool] = {}
    for candidate in candidates:
        ref = candidate.reference
        if ref.index not in naming:
            words = set(tokenize(f"{ref.path} {ref.text}"))
            naming[ref.index] = any(code <= words for code in codes)
    return [c for c in candidates if naming[c.reference.index]] or candidates


def _adding_something(ranked: Sequence[_Scored]) -> list[_Scored]:
    """The sentences, best first, without those that match only part of what a better one
    matches: for "output of the Calder plant in 2020", Calder's table row matches every word
    and Kestrel's ("output", "plant", "2020") answers another plant; quoted, it was cited as if
    it supported the answer. A sentence quoted already (the same file in two KBs, a paragraph
    repeated in another document) is not quoted again under another source's number."""
    kept: list[_Scored] = []
    quoted: set[str] = set()
    for candidate in ranked:
        text = " ".join(candidate.sentence.split()).casefold()
        if text in quoted or any(_matches_part_of(candidate, better) for better in kept):
            continue
        kept.append(candidate)
        quoted.add(text)
    return kept


def _matches_part_of(candidate: _Scored, better: _Scored) -> bool:
    """Whether ``candidate`` matches only part of what ``better`` matches.

    Of the question as asked, or of it and the question a follow-up continues: the earlier
    question's words only break ties, so "and sick leave?" after a question about parental leave
    no longer quotes the parental-leave sentence (it matches "leave" and "parental", the
    sick-leave ones "sick" and "leave"). A heading the two share makes no sentence say more than
    the other: under "Firmware", "Version v2.9.8 is no longer supported" matched "firmware" too,
    and "The current firmware is v2.10.3", which says it itself, was left out.
    """
    narrower = candidate.hits < better.hits or candidate.about < better.about
    if not narrower or candidate.heading != better.heading:
        return narrower
    return candidate.about & candidate.said <= better.about & better.said


def _question_terms(question: str) -> set[str]:
    """The words a quoted sentence must share with the question. Never function words alone:
    for "what is it?" every sentence with "is" matched, and one was quoted as the answer."""
    terms = set(content_tokens(question))
    asking = {t for m in _ASKING_FOR.finditer(question) for t in tokenize(m.group(1))}
    return terms - asking or terms  # "How long?" alone keeps its one word


@dataclass(frozen=True, slots=True)
class _Asked:
    """The user's question, to tell a line that only echoes it: a lone title line
    ("纽西兰鸡毛松") was quoted as the answer to "纽西兰鸡毛松有多高", beside the sentences that
    answer it. Such a line is quoted only when nothing else matches ("Weight: 17 kg" may be all
    there is to answer "Is the weight 17 kg?")."""

    tokens: frozenset[str]
    letters: str  # its word characters run together: jieba cuts a phrase by its context

    @classmethod
    def of(cls, question: str) -> _Asked:
        return cls(frozenset(tokenize(question)), _letters(question))

    def echoed_by(self, sentence: str) -> bool:
        """A line with no full stop (a title) whose words are all the question's. A sentence
        is never an echo: "Warranty: 10 years." answers "Is the warranty 10 years?"."""
        if _ENDS.search(sentence):
            return False
        words = set(content_tokens(sentence))
        return bool(words) and (words <= self.tokens or _letters(sentence) in self.letters)


def _letters(text: str) -> str:
    return "".join(_WORDS.findall(text.lower()))


def _sentences(reference: Reference) -> list[tuple[str, frozenset[str]]]:
    """The reference's sentences, each with the words of the heading it stands under.

    A blank line ends a sentence too: a slide's bullets ("Gas prices stabilised") carry no full
    stop and were quoted as the start of the speaker notes that follow them. A heading line
    (headings.py) is no sentence and never an answer on its own, but its words count for the
    sentences under it, up to the next heading (they are what those sentences are about), as
    they do in BM25. Before the first heading line, the source's section headings below the
    document title count, as in its BM25 text: a chunk seldom repeats them ("Steps" over a
    numbered list). A table row is a sentence of its own, under its column names (tables.py).
    A question is no answer either: an FAQ's "Q: Can I install it myself?" was quoted, and its
    answer left out for matching fewer words. It stands over the sentences after it, up to the
    next question or heading, as a heading does.
    """
    titles = frozenset(" ".join(t.split()) for t in reference.path.split("/"))
    found: list[tuple[str, frozenset[str]]] = []
    _, _, below_title = reference.path.partition("/")
    heading = frozenset(tokenize(below_title.replace("/", " ")))
    posed: frozenset[str] = frozenset()  # the words of the last question the text asked
    for block in _PARAGRAPH_BREAK.split(reference.text):
        for prose, table in split_tables(block):
            if table is not None:
                columns = heading | posed | frozenset(tokenize(" ".join(table.header)))
                found.extend((row, columns) for row in table.row_sentences())
                continue
            for run, is_heading in split_headings(prose, titles):
                if is_heading:
                    heading, posed = frozenset(tokenize(run)), frozenset()
                    continue
                for sentence in _block_sentences(run):
                    if _ASKS.search(sentence):
                        posed = frozenset(tokenize(sentence))
                    else:
                        found.append((sentence, heading | posed))
    return found


def _block_sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    sentences: list[str] = []
    start = scanned = 0
    still_open: list[str] = []  # the closing marks the current sentence waits for, innermost last
    for end in _SENTENCE_END.finditer(flat):
        _follow_brackets(flat[scanned : end.end()], still_open)
        scanned = end.end()
        piece = flat[start : end.end()]
        if not piece.strip() or _ends_with_abbreviation(piece) or _LIST_MARKER.match(piece):
            continue
        if still_open and still_open[-1] in flat[end.end() : end.end() + MAX_BRACKETED]:
            continue
        sentences.append(piece.strip())
        start = end.end()
        still_open.clear()
    if flat[start:].strip():
        sentences.append(flat[start:].strip())
    return sentences


def _follow_brackets(text: str, still_open: list[str]) -> None:
    """Push the closing mark of each bracket or quote ``text`` opens, pop each it closes."""
    for char in text:
        if char in _CLOSING:
            still_open.append(_CLOSING[char])
        elif still_open and char == still_open[-1]:
            still_open.pop()


def _ends_with_abbreviation(piece: str) -> bool:
    # The last word only, split from the right: a piece grows while abbreviations follow one
    # another ("Dr. Dr. Dr. …"), and splitting all of it each time was quadratic.
    words = piece.rstrip().rsplit(None, 1)
    return bool(words) and words[-1].rstrip(".").lower() in _ABBREVIATIONS and piece.endswith(".")


def _runs(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
