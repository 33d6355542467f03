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
# A question that asks with one of these and a verb, of two words of its own or more ("Who is
# the security officer?"), is whole: it names what it asks about. One word is too little to
# name a topic: "What is the price?" after a question about the X5 asks the X5's price.
_WHOLE_TERMS = 2
_ASKS_WHOLE = re.compile(
    r"^\s*(?:who|whom|whose|what|which|when|where|why|how)\b.*?"
    r"\b(?:is|are|was|were|do|does|did|can|could|will|would|should|shall|must|may|has|have|had)\b",
    re.IGNORECASE,
)
_ZH_ASKS = re.compile(r"谁|什么|哪|几|多少|多久|多长|怎么|怎样|为什么|如何")
# A word that points back at the conversation ("What does that mean?", "Who signs it?", "他们的
# 电话是多少？"): the question leans on the one before, whatever else it says.
_POINTS_BACK = re.compile(
    r"\b(?:it|its|they|them|their|theirs|he|him|his|she|her|hers|this|that|these|those|one|ones)\b"
    r"|[它他她这那]|呢\s*[?？]?\s*$",
    re.IGNORECASE,
)


def is_follow_up(question: str) -> bool:
    """Whether a question needs the one before it to be understood."""
    if _CONTINUES.match(question):
        return True
    terms = content_tokens(question)
    if len(terms) >= _WHOLE_TERMS and _asks_on_its_own(question):
        return False
    return len(terms) <= _ELLIPTICAL_TERMS


def _asks_on_its_own(question: str) -> bool:
    """A question word and a verb, and no word pointing back: "Who is the security officer?"
    after a question about annual leave was searched joined to it (two words of its own, so
    taken for elliptical) and answered with the leave policy. "What year?" and "Who is he?"
    still lean on the question before."""
    if _POINTS_BACK.search(question):
        return False
    return bool(_ASKS_WHOLE.match(question) or _ZH_ASKS.search(question))


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
