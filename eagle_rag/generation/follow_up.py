"""Follow-up questions of a session, made searchable on their own.

"And in 2021?" after "What was the output of the Calder plant in 2020?" names no plant: searched
alone it finds whichever table mentions 2021, and the model (or the extractive answerer, which
sees no history) answers from the wrong evidence. So a question that leans on the conversation
is searched together with the question it follows; a question that stands on its own is searched
as it is. The model still sees the question as asked, after the earlier turns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from eagle_rag.index.sparse import content_tokens
from eagle_rag.retrieval.service import MAX_QUERY_CHARS

# A question that opens like this continues the one before ("and in 2021?", "what about
# Singapore?", "那 2021 年呢？").
_CONTINUES = re.compile(
    r"^\s*(?:and|or|but|also|then|what about|how about|same for|那么?|还有|以及|另外)"
    r"(?![a-z])",
    re.IGNORECASE,
)
# At most this many words besides function words: too few to name a topic of their own.
_ELLIPTICAL_TERMS = 2


def is_follow_up(question: str) -> bool:
    """Whether a question needs the one before it to be understood."""
    if _CONTINUES.match(question):
        return True
    terms = content_tokens(question)
    return len(terms) <= _ELLIPTICAL_TERMS


def standalone_query(question: str, earlier: Sequence[str], *, limit: int = MAX_QUERY_CHARS) -> str:
    """The text to search for ``question``, given the user's ``earlier`` questions (oldest
    first): joined to the chain it follows on from (the question that started the chain and its
    follow-ups), at most ``limit`` characters."""
    if not earlier or not is_follow_up(question):
        return question
    return _capped([*_chain(earlier), question], limit)


def _chain(earlier: Sequence[str]) -> list[str]:
    """The last question that stands on its own and the follow-ups after it (all of
    ``earlier`` when none does)."""
    start = 0
    for n, asked in enumerate(earlier):
        if not is_follow_up(asked):
            start = n
    return list(earlier[start:])


def _capped(chain: list[str], limit: int) -> str:
    """The chain joined, its middle left out when too long: the question that started it names
    the topic and the newest turns say what is asked now (a 3966-character question and three
    follow-ups made a search text the search refused as too long)."""
    joined = " ".join(chain)
    if len(joined) <= limit:
        return joined
    first, question = chain[0], chain[-1]
    room = limit - len(first) - len(question) - 1
    if room < 0:  # the newest question is whole; the first keeps what fits of its beginning
        head = first[: max(0, limit - len(question) - 1)].rstrip()
        return f"{head} {question}" if head else question
    kept: list[str] = []
    for turn in reversed(chain[1:-1]):
        if len(turn) + 1 > room:
            break
        kept.insert(0, turn)
        room -= len(turn) + 1
    return " ".join([first, *kept, question])
