"""Entity mentions in a text: lexicon terms, exact-case symbols and learned abbreviations.

One pass over the text's tokens with the lexicon's trie and, per knowledge base in scope, one
of the long forms it taught that name no lexicon term; overlapping matches resolve to the
longest (then leftmost). Tokens no term covered are looked up as symbols ("IL33") and as learned
short forms ("ACE", "IL-6"). Learned pairs are used only within the KBs they were learned in
(``kbs``: those names, or None for every KB): a long form is a document's text.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from plugins.biomed.abbreviations import AbbreviationBook, KbScope
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
        # Per KB, the long forms the lexicon does not know → "abbr:SHORT".
        self._learned: dict[str, TokenTrie] = {}
        for item in book.items():
            self._index_long_form(item.kb_name, item.short, item.long)

    def learn(self, kb_name: str, pairs: Iterable[tuple[str, str]]) -> int:
        """Learn "long form (SHORT)" pairs a document of ``kb_name`` wrote; returns how many
        short forms changed meaning there."""
        changed = self.book.learn(kb_name, pairs)
        for kb, short, long in changed:
            self._index_long_form(kb, short, long)
        return len(changed)

    def refresh(self) -> None:
        """Take in the long forms other processes learned (the book reloads its file when it
        changed, looking at most every few seconds)."""
        for kb, short, long in self.book.refresh():
            self._index_long_form(kb, short, long)

    def mentions(self, text: str, kbs: KbScope = None) -> list[Mention]:
        """What ``text`` names, with the abbreviations the KBs ``kbs`` taught."""
        self.refresh()
        text = text[:MAX_TEXT_CHARS]
        words = tokens(text)
        covered = [False] * len(words)
        found: list[Mention] = []
        learned = [t for kb, t in list(self._learned.items()) if kbs is None or kb in kbs]
        for match, via in _longest_first(self.lexicon.trie, learned, words):
            if any(covered[match.first : match.last]):
                continue
            covered[match.first : match.last] = [True] * (match.last - match.first)
            surface = text[match.start : match.end]
            found.extend(
                Mention(cid, self.name_of(cid, kbs), surface, match.start, match.end, via)
                for cid in dict.fromkeys(match.concepts)
            )
        for first, last, surface in _short_candidates(text, words):
            if not any(covered[first:last]):
                span = (words[first].start, words[last - 1].end)
                mentions = self._short_form(surface, span, kbs)
                if mentions:
                    covered[first:last] = [True] * (last - first)
                    found.extend(mentions)
        found.sort(key=lambda m: (m.start, m.concept_id))
        return found

    def concept_ids(self, text: str, kbs: KbScope = None) -> list[str]:
        """Distinct concept ids, most mentioned first (ties by first mention)."""
        counts = Counter(m.concept_id for m in self.mentions(text, kbs))
        return [cid for cid, _ in counts.most_common()]

    def name_of(self, concept_id: str, kbs: KbScope = None) -> str:
        concept = self.lexicon.concepts.get(concept_id)
        if concept is not None:
            return concept.name
        if concept_id.startswith("abbr:"):
            return self.book.long_form(concept_id[5:], kbs) or concept_id[5:]
        return concept_id

    def synonyms_of(self, concept_id: str, kbs: KbScope = None) -> tuple[str, ...]:
        """Every name of a concept: the lexicon's, or a learned long form and its short form."""
        concept = self.lexicon.concepts.get(concept_id)
        names = list(concept.names) if concept else [self.name_of(concept_id, kbs)]
        if concept_id.startswith("abbr:"):
            names.append(concept_id[5:])
        return tuple(dict.fromkeys(names))

    def _short_form(self, surface: str, span: tuple[int, int], kbs: KbScope) -> list[Mention]:
        """What a short form names: what the KBs in scope defined it as and, when the lexicon
        has a symbol of that spelling, its concepts too. Both, because chunks tagged with the
        symbol's ids before (or in KBs without) the definition must stay findable by it."""
        # The surface is the text's own; symbols are looked up in NFKC, as terms are.
        symbol = unicodedata.normalize("NFKC", surface)
        long = self.book.long_form(symbol, kbs)
        ids: list[tuple[str, str]] = []
        if long is not None:
            defined = self._resolve(long) or (f"abbr:{symbol}",)
            ids += [(cid, "abbreviation") for cid in defined]
        ids += [(cid, "symbol") for cid in self.lexicon.symbols.get(symbol, ())]
        unique: dict[str, str] = {}
        for cid, via in ids:  # a concept named both ways is named by the definition
            unique.setdefault(cid, via)
        return [
            Mention(cid, self.name_of(cid, kbs), surface, *span, via) for cid, via in unique.items()
        ]

    def _resolve(self, long: str) -> tuple[str, ...]:
        """The lexicon concepts a long form names when one term spans all of it."""
        key = normalise_term(long)
        for match in self.lexicon.trie.find(tokens(long)):
            if match.first == 0 and match.last == len(key):
                return match.concepts
        return ()

    def _index_long_form(self, kb_name: str, short: str, long: str) -> None:
        if not self._resolve(long):
            trie = self._learned.setdefault(kb_name, TokenTrie())
            trie.add(normalise_term(long), f"abbr:{short}")


def _longest_first(
    lexicon: TokenTrie, learned: list[TokenTrie], words: list[Token]
) -> list[tuple[TermMatch, str]]:
    """The tries' matches, longer spans first, then leftmost."""
    matches = [(m, "term") for m in lexicon.find(words)]
    matches += [(m, "abbreviation") for trie in learned for m in trie.find(words)]
    matches.sort(key=lambda item: (item[0].first - item[0].last, item[0].first))
    return matches


def _short_candidates(text: str, words: list[Token]) -> Iterator[tuple[int, int, str]]:
    """(first, last, surface) for each token, and for hyphenated pairs such as "IL-6"."""
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        if following is not None and text[word.end : following.start] == "-":
            yield index, index + 2, text[word.start : following.end]
        yield index, index + 1, word.surface
