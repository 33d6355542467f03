"""Which Word paragraphs are headings, and of what level.

A heading is what Word's navigation pane shows: a paragraph whose style is a ``Heading N``
(or a style based on one, however many steps down: "Corp Heading" based on "Heading 1"), or
whose outline level (``w:outlineLvl``, 0 for level 1) is set on the paragraph or its style.
The paragraph's own outline level wins; 9 there means body text, whatever the style says.
"""

from __future__ import annotations

import re
from typing import Any

from eagle_rag.ingest.parsers.docx_body import W

_HEADING = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
_BODY_TEXT = 9  # the outline level Word gives body text
_MAX_BASES = 16  # a style chain longer than this is a loop in a broken file


def heading_level(paragraph: Any) -> int | None:
    """The paragraph's heading level (1 = top), None for body text."""
    own = _outline_level(paragraph._p.pPr)
    if own is not None:
        return own + 1 if own < _BODY_TEXT else None
    style = paragraph.style
    for _ in range(_MAX_BASES):
        if style is None:
            return None
        match = _HEADING.match((style.name or "").strip())
        if match:
            return int(match.group(1))
        level = _outline_level(style.element.pPr)
        if level is not None:
            return level + 1 if level < _BODY_TEXT else None
        style = style.base_style
    return None


def _outline_level(properties: Any) -> int | None:
    found = properties.find(f"{W}outlineLvl") if properties is not None else None
    value = found.get(f"{W}val") if found is not None else None
    return int(value) if value is not None and value.isdigit() else None
