"""Entity mentions in a text: lexicon terms, exact-case symbols and learned abbreviations.

One pass over the text's tokens with two tries, the lexicon's and one of learned long forms
that name no lexicon term; overlapping matches resolve to the longest (then leftmost). Tokens
no term covered are looked up as symbols ("IL33") and as learned short forms ("ACE", "IL-6").
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from plugins.biomed.abbreviations import AbbreviationBook
from plugins.biomed.lexicon import Lexicon
from plugins.biomed.terms import TermMatch, Token, TokenTrie, normalise_term, tokens

MAX_TEXT_CHARS = 200_000  # a longer text is scanned up to here (a chunk never is, in practice)


@dataclass(frozen=True, slots=True)
class Mention:
    """A concept named in a text, where, and how it was recognised."""

    concept_id: str
    name: str
    surface: str
    start: int
    end: int
    via: str  # "term" | "symbol" | "abbreviation"


class EntityFinder:
    """Finds mentions with one lexicon and one (growing) abbreviation book."""

    def __init__(self, lexicon: Lexicon, book: AbbreviationBook) -> None:
        self.lexicon = lexicon
        self.book = book
        self._learned = TokenTrie()  # long forms the lexicon does not know → "abbr:SHORT"
        for item in book.items():
            self._index_long_form(item.short, item.long)

    def learn(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Learn "long form (SHORT)" pairs; returns how many short forms changed meaning."""
        changed = self.book.learn(pairs)
        for short, long in changed:
            self._index_long_form(short, long)
        return len(changed)

    def refresh(self) -> None:
        """Take in the long forms other processes learned (the book reloads its file when it
        changed, looking at most every few seconds)."""
        for short, long in self.book.refresh():
            self._index_long_form(short, long)

    def mentions(self, text: str) -> list[Mention]:
        self.refresh()
        text = text[:MAX_TEXT_CHARS]
        words = tokens(text)
        covered = [False] * len(words)
        found: list[Mention] = []
        for match, via in _longest_first(self.lexicon.trie, self._learned, words):
            if any(covered[match.first : match.last]):
                continue
            covered[match.first : match.last] = [True] * (match.last - match.first)
            surface = text[match.start : match.end]
            found.extend(
                Mention(cid, self.name_of(cid), surface, match.start, match.end, via)
                for cid in match.concepts
            )
        for first, last, surface in _short_candidates(text, words):
            if not any(covered[first:last]):
                mentions = self._short_form(surface, words[first].start, words[last - 1].end)
                if mentions:
                    covered[first:last] = [True] * (last - first)
                    found.extend(mentions)
        found.sort(key=lambda m: (m.start, m.concept_id))
        return found

    def concept_ids(self, text: str) -> list[str]:
        """Distinct concept ids, most mentioned first (ties by first mention)."""
        counts = Counter(m.concept_id for m in self.mentions(text))
        return [cid for cid, _ in counts.most_common()]

    def name_of(self, concept_id: str) -> str:
        concept = self.lexicon.concepts.get(concept_id)
        if concept is not None:
            return concept.name
        if concept_id.startswith("abbr:"):
            return self.book.long_form(concept_id[5:]) or concept_id[5:]
        return concept_id

    def synonyms_of(self, concept_id: str) -> tuple[str, ...]:
        """Every name of a concept: the lexicon's, or a learned long form and its short form."""
        concept = self.lexicon.concepts.get(concept_id)
        names = list(concept.names) if concept else [self.name_of(concept_id)]
        if concept_id.startswith("abbr:"):
            names.append(concept_id[5:])
        return tuple(dict.fromkeys(names))

    def _short_form(self, surface: str, start: int, end: int) -> list[Mention]:
        # What this corpus defined a short form as beats the lexicon's symbol of that name.
        # The surface is the text's own; symbols are looked up in NFKC, as terms are.
        symbol = unicodedata.normalize("NFKC", surface)
        long = self.book.long_form(symbol)
        ids: tuple[str, ...]
        if long is not None:
            ids = self._resolve(long) or (f"abbr:{symbol}",)
            via = "abbreviation"
        else:
            ids = self.lexicon.symbols.get(symbol, ())
            via = "symbol"
        if not ids:
            return []
        return [Mention(cid, self.name_of(cid), surface, start, end, via) for cid in ids]

    def _resolve(self, long: str) -> tuple[str, ...]:
        """The lexicon concepts a long form names when one term spans all of it."""
        key = normalise_term(long)
        for match in self.lexicon.trie.find(tokens(long)):
            if match.first == 0 and match.last == len(key):
                return match.concepts
        return ()

    def _index_long_form(self, short: str, long: str) -> None:
        if not self._resolve(long):
            self._learned.add(normalise_term(long), f"abbr:{short}")


def _longest_first(
    lexicon: TokenTrie, learned: TokenTrie, words: list[Token]
) -> list[tuple[TermMatch, str]]:
    """Both tries' matches, longer spans first, then leftmost."""
    matches = [(m, "term") for m in lexicon.find(words)]
    matches += [(m, "abbreviation") for m in learned.find(words)]
    matches.sort(key=lambda item: (item[0].first - item[0].last, item[0].first))
    return matches


def _short_candidates(text: str, words: list[Token]) -> Iterator[tuple[int, int, str]]:
    """(first, last, surface) for each token, and for hyphenated pairs such as "IL-6"."""
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        if following is not None and text[word.end : following.start] == "-":
            yield index, index + 2, text[word.start : following.end]
        yield index, index + 1, word.surface
