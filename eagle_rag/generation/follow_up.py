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

from eagle_rag.generation.prompt import Turn
from eagle_rag.index.sparse import QUERY_STOPWORDS, tokenize

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
    terms = [t for t in tokenize(question, query=True) if t not in QUERY_STOPWORDS]
    return len(terms) <= _ELLIPTICAL_TERMS


def standalone_query(question: str, history: Sequence[Turn]) -> str:
    """The text to search for ``question``: joined to the topic of the earlier user turns when
    it follows on from them (a chain of follow-ups keeps the question that started it)."""
    topic: str | None = None
    for turn in history:
        if turn.role == "user":
            topic = _continued(topic, turn.content)
    return _continued(topic, question)


def _continued(topic: str | None, question: str) -> str:
    if topic is None or not is_follow_up(question):
        return question
    return f"{topic} {question}"
