"""Term normalisation and a token trie: find every vocabulary term in a text in one pass.

Terms and texts are cut into the same normalised tokens (NFKC, lower case, English plurals
folded by the "S" stemmer, so "Neoplasms" and "neoplasm" are one token), and the trie is keyed
by tokens. (Snowball, as BM25 uses, was measured at 7 s for the lexicon's 44k distinct words in
pure Python; the S stemmer folds what term matching needs, plurals, at a fraction of that.) Finding
terms walks the trie from each token: the cost is tokens x (longest term in tokens), whatever
the vocabulary's size; there is no per-term regular expression.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_END = ""  # the key under which a trie node stores the concepts a term ending there names


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a text: its normalised form, its surface form and its character span."""

    norm: str
    surface: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TermMatch:
    """A vocabulary term found in a text: token span, character span and the concepts named."""

    first: int
    last: int  # exclusive token index
    start: int
    end: int
    concepts: tuple[str, ...]


@functools.lru_cache(maxsize=200_000)
def normalise_word(word: str) -> str:
    """The normalised form of one token (cached: words repeat)."""
    lowered = word.lower()
    if len(lowered) <= 3 or not lowered.isalpha():
        return lowered
    if lowered.endswith("ies") and not lowered.endswith(("eies", "aies")):
        return lowered[:-3] + "y"
    if lowered.endswith("es") and not lowered.endswith(("aes", "ees", "oes")):
        return lowered[:-1]
    if lowered.endswith("s") and not lowered.endswith(("us", "ss", "is")):
        return lowered[:-1]
    return lowered


def tokens(text: str) -> list[Token]:
    """Tokens of ``text`` with their spans in the original string (``surface`` is
    ``text[start:end]`` even where NFKC changes lengths, as ligatures such as "ﬁ" do)."""
    if unicodedata.is_normalized("NFKC", text):  # the usual case: spans are the text's own
        return [
            Token(normalise_word(m.group()), m.group(), m.start(), m.end())
            for m in _TOKEN.finditer(text)
        ]
    normalized, starts, ends = _normalized_with_offsets(text)
    found = []
    for m in _TOKEN.finditer(normalized):
        start, end = starts[m.start()], ends[m.end() - 1]
        found.append(Token(normalise_word(m.group()), text[start:end], start, end))
    return found


def _normalized_with_offsets(text: str) -> tuple[str, list[int], list[int]]:
    """NFKC of ``text`` and, per character of it, the span of the original it came from.

    A base character is normalised with the combining marks that follow it, so "e" + U+0301
    still composes into one "é"."""
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    cluster_start = 0
    for index in range(1, len(text) + 1):
        if index < len(text) and unicodedata.combining(text[index]):
            continue
        piece = unicodedata.normalize("NFKC", text[cluster_start:index])
        pieces.append(piece)
        starts.extend([cluster_start] * len(piece))
        ends.extend([index] * len(piece))
        cluster_start = index
    return "".join(pieces), starts, ends


def normalise_term(term: str) -> tuple[str, ...]:
    """A term as the token key the trie stores it under (the same tokens as :func:`tokens`)."""
    return tuple(normalise_word(w) for w in _TOKEN.findall(unicodedata.normalize("NFKC", term)))


class TokenTrie:
    """Maps token sequences to concept ids; finds leftmost-longest, non-overlapping matches."""

    def __init__(self) -> None:
        self._root: dict[str, object] = {}
        self.depth = 0
        self.size = 0

    def add(self, key: Sequence[str], concept: str) -> None:
        if not key:
            return
        node = self._root
        for part in key:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            node = child  # type: ignore[assignment]
        ids = node.setdefault(_END, [])
        assert isinstance(ids, list)
        if concept not in ids:
            ids.append(concept)
            self.size += 1
        self.depth = max(self.depth, len(key))

    def find(self, words: Sequence[Token]) -> Iterator[TermMatch]:
        """Leftmost-longest matches: a longer term ("breast cancer") wins over its parts."""
        index = 0
        while index < len(words):
            found = self._longest(words, index)
            if found is None:
                index += 1
                continue
            last, concepts = found
            yield TermMatch(index, last, words[index].start, words[last - 1].end, concepts)
            index = last

    def _longest(self, words: Sequence[Token], first: int) -> tuple[int, tuple[str, ...]] | None:
        node = self._root
        best: tuple[int, tuple[str, ...]] | None = None
        for position in range(first, min(len(words), first + self.depth)):
            child = node.get(words[position].norm)
            if child is None:
                break
            node = child  # type: ignore[assignment]
            ids = node.get(_END)
            if ids:
                best = (position + 1, tuple(ids))  # type: ignore[arg-type]
        return best
