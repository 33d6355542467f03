"""CHUNK_DOCUMENT for lakehouse files: Core's chunks, less the section summaries that only
repeat chunks stored next to them.

Core gives every section with subsections a ``section_summary`` chunk (its title, the opening
of its text, its subsections' titles): the way into a long chapter. In a lakehouse file every
object is its own section and chunk, so a model's summary repeats the model's own chunk (its
description, grain and the names of its columns) and the titles of its column sections, each a
chunk that names itself; a ``.sql`` file's project heading lists the one model of the file. Each
such summary was one more text to embed (on a dbt project, a fifth of the embedded tokens) and
to store, for nothing a search could not find in the chunks beside it.

Kept: the summary of a section whose own text spans several chunks (the entry to a long
definition, as in Core), and of a heading that lists several objects and has no text of its own
(``metrics``, a property file's project heading): no other chunk lists them together.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from eagle_rag.plugins.payloads import TextChunk

SUMMARY = "section_summary"


def without_repeating_summaries(chunks: tuple[TextChunk, ...]) -> tuple[TextChunk, ...]:
    own: dict[str, list[TextChunk]] = defaultdict(list)
    for chunk in chunks:
        if chunk.type != SUMMARY:
            own[chunk.path].append(chunk)
    kept = [c for c in chunks if c.type != SUMMARY or not repeats(c, own.get(c.path, []))]
    # chunk_index is the document's reading order: renumbered so it stays without gaps.
    return tuple(replace(chunk, chunk_index=i) for i, chunk in enumerate(kept))


def repeats(summary: TextChunk, own: list[TextChunk]) -> bool:
    """Whether every line of ``summary`` is said by a chunk of its own section or of its only
    subsection: one own chunk that names every subsection, or no text and one subsection."""
    children = [str(c) for c in summary.metadata.get("children", ())]
    if len(own) == 1:
        return all(names(own[0].text, child) for child in children)
    return not own and len(children) <= 1


def names(text: str, name: str) -> bool:
    """``name`` appears in ``text`` as a whole identifier (``id`` is not in ``order_id``)."""
    pattern = rf"(?<![\w.]){re.escape(name)}(?!\w|\.\w)"
    return re.search(pattern, text) is not None
