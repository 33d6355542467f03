"""Heading lines inside a source's text, for the extractive answerer.

A section summary is its title, a line break and the section's opening ("3.2 Maintenance
schedule" / "The gearbox oil is changed every two years."); Markdown and plain-text sources
carry their headings as lines too. Flattened into sentences, a heading was quoted glued to the
sentence after it. A line is taken for a heading only when it is marked as one, since a wrong
guess drops text an answer may need (a table row "2020 4.7 million tonnes", a wrapped line
"230 volts are applied to the motor windings"):

- a Markdown heading (``## Warranty``), always;
- otherwise it must stand between sentences (after the start of the block, a finished
  sentence or another heading), have no sentence end, comma or colon of its own and no number
  but its section number, and be short (at most ``MAX_HEADING_WORDS`` words); and be numbered
  (``3.2 Maintenance``, ``1. Introduction``, ``第三章 维护``, ``一、总则``), in capitals
  (``WARRANTY TERMS``), one of the reference's section titles, or, followed by a line that
  starts a sentence, in Title Case (``Safety Rules``). A statement in sentence case ("Gas
  prices stabilised") stays text. A Chinese line has no spaces to count words by: only a
  numbered one is a heading (``第三条`` starts an article's own text, so it is not one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from eagle_rag.sentence_ends import SPACED_STOPS, SPACELESS_STOPS

MAX_HEADING_WORDS = 10
MAX_CJK_HEADING_CHARS = 30

_MARKDOWN = re.compile(r"#{1,6}\s+(.*)")
# A section number: dotted ("3.2 ", "4.1.2. "), or one or two digits before a capital ("1.
# Introduction", "3 Service"): "230 volts" and "12 months" are text.
_LATIN_NUMBER = re.compile(r"(\d{1,2}(\.\d{1,2})+\.?|\d{1,2}\.?(?=\s+[A-Z]))\s+")
_CJK_NUMBER = re.compile(
    r"(第[一二三四五六七八九十百零〇\d]{1,4}[章节部篇]|[一二三四五六七八九十]{1,3}、)"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_ENDS_SENTENCE = re.compile(rf"[{SPACED_STOPS}{SPACELESS_STOPS}][\"')\]」』]*\s*$")
_INNER_END = re.compile(rf"[{SPACED_STOPS}](\s|$)|[{SPACELESS_STOPS}，；：]")
_LEADS = ",;:，；：、"
# Words a title does not end on: "2020 output rose by" / "4 percent." runs on.
_RUNS_ON = frozenset(re.findall(r"\S+", "a an the of to in on at by for from with and or as than"))


def split_headings(block: str, titles: frozenset[str]) -> Iterator[tuple[str, bool]]:
    """The block's text in runs between its heading lines: (text, is_heading), in reading
    order; a heading comes without its Markdown marks."""
    lines = [line.strip() for line in block.splitlines()]
    run: list[str] = []
    preceding, after_heading = "", False
    for index, line in enumerate(lines):
        following = next((f for f in lines[index + 1 :] if f), "")
        if is_heading(line, preceding, after_heading, following, titles):
            if run:
                yield "\n".join(run), False
                run = []
            markdown = _MARKDOWN.match(line)
            yield (markdown.group(1) if markdown else line), True
            after_heading = True
        elif line:
            run.append(line)
            after_heading = False
        if line:
            preceding = line
    if run:
        yield "\n".join(run), False


def is_heading(
    line: str, preceding: str, after_heading: bool, following: str, titles: frozenset[str]
) -> bool:
    """Whether ``line`` is a heading (module docstring), given the lines around it."""
    if _MARKDOWN.match(line):
        return True
    if not line or line.endswith(tuple(_LEADS)):
        return False
    if preceding and not after_heading and not _ENDS_SENTENCE.search(preceding):
        return False  # the line goes on with the sentence before it
    if " ".join(line.split()) in titles:
        return True
    if _CJK.search(line):
        return (
            bool(_CJK_NUMBER.match(line))
            and len(line) <= MAX_CJK_HEADING_CHARS
            and not _INNER_END.search(line)
        )
    number = _LATIN_NUMBER.match(line)
    body = line[number.end() :] if number else line
    words = body.split()
    if (
        not words
        or len(words) > MAX_HEADING_WORDS
        or words[-1].lower() in _RUNS_ON
        or any(c.isdigit() for c in body)
        or _INNER_END.search(body)
    ):
        return False
    if number or body.isupper():
        return True
    return _title_case(words) and bool(following) and _starts_sentence(following)


def _title_case(words: list[str]) -> bool:
    significant = [w for w in words if len(w) > 3 and w[0].isalpha()]
    return bool(significant) and all(w[0].isupper() for w in significant)


def _starts_sentence(line: str) -> bool:
    first = line[0]
    return first.isupper() or first.isdigit() or bool(_CJK.match(first))
