"""The Parser component: declares MIME types, turns bytes into a ParseResult of sections.

The shape follows the chat-bot platform's plugin SDK (``supported_mime_types`` and ``parse``), so
a parser can be written once and offered to both hosts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from eagle_rag.plugins.payloads import ParseResult, TextSection


@dataclass(frozen=True, slots=True)
class ParseContext:
    """What a parser receives: the bytes, the original name, the detected type and limits.

    ``on_page(done, total)``, when given, is called as paged parsers (PDF, images) finish each
    page, so a long OCR run can show its progress (and stop: an exception it raises ends the
    parse). ``ocr`` says whether pages may be read from their pixels (the ``pixelrag``
    pipeline); without it a PDF gives only its text layer and an image is refused.
    """

    data: bytes
    filename: str
    mime_type: str
    max_pages: int = 2000
    on_page: Callable[[int, int], None] | None = None
    ocr: bool = True

    def page_done(self, done: int, total: int) -> None:
        if self.on_page is not None:
            self.on_page(done, total)


@runtime_checkable
class Parser(Protocol):
    name: str
    supported_mime_types: tuple[str, ...]

    def parse(self, context: ParseContext) -> ParseResult: ...


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """Render rows (first = header) as a Markdown pipe table; cells are flattened to one line.

    Short rows are not padded (a pipe table fills them in when shown): a header of 20,000
    columns over 5,000 one-value rows made a 50 KB CSV into 300 MB of empty cells."""
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return ""

    def cell(value: object) -> str:
        text = "" if value is None else str(value)
        return " ".join(text.split()).replace("|", "\\|")

    lines = []
    for index, row in enumerate(rows):
        cells = [cell(v) for v in row] or [""]
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


def result(sections: Iterable[TextSection], **metadata: object) -> ParseResult:
    """A ParseResult whose text is its non-empty sections joined by blank lines."""
    kept = tuple(s for s in sections if s.content.strip() or s.heading)
    text = "\n\n".join(s.content for s in kept if s.content.strip())
    return ParseResult(text=text, sections=kept, metadata=dict(metadata))
