"""Build the section tree from a parser's blocks.

The tree owns the document's canonical text: headings and blocks joined by blank lines. Every
block, section and chunk records ``[start, end)`` offsets into that text, so a citation can be
highlighted in the original reading order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle_rag.plugins.payloads import PageBox, ParseResult, TextSection

SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Block:
    text: str
    kind: str
    page: int | None
    start: int
    end: int
    boxes: tuple[PageBox, ...] = ()  # offsets relative to ``text``


@dataclass(slots=True)
class Section:
    """A node of the tree: ``path`` is "<title>/<heading>/..." and unique within the document."""

    path: str
    title: str
    level: int
    parent: str | None
    heading_start: int | None = None
    heading_page: int | None = None  # where the heading itself is printed
    heading_boxes: tuple[PageBox, ...] = ()
    blocks: list[Block] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    pages: set[int] = field(default_factory=set)

    @property
    def start(self) -> int | None:
        if self.heading_start is not None:
            return self.heading_start
        return self.blocks[0].start if self.blocks else None

    def to_dict(self, end: int | None) -> dict[str, Any]:
        return {
            "path": self.path,
            "title": self.title,
            "level": self.level,
            "parent": self.parent,
            "children": list(self.children),
            "page_nums": sorted(self.pages),
            "start_offset": self.start,
            "end_offset": end,
            "blocks": len(self.blocks),
        }


@dataclass(frozen=True, slots=True)
class StructureTree:
    title: str
    text: str
    sections: tuple[Section, ...]  # pre-order: a parent before its children

    def section(self, path: str) -> Section:
        return next(s for s in self.sections if s.path == path)

    def subtree_end(self, section: Section) -> int | None:
        """Where a section's text ends, its descendants included."""
        ends = [b.end for s in self.sections if _within(s.path, section.path) for b in s.blocks]
        return max(ends) if ends else section.start

    def to_dict(self) -> dict[str, Any]:
        """The JSON kept on the document (``/documents/{id}/structure``)."""
        return {
            "title": self.title,
            "length": len(self.text),
            "sections": [s.to_dict(self.subtree_end(s)) for s in self.sections],
        }


def _within(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor + "/")


def _segment(text: str) -> str:
    # A heading is one path segment, so it may not contain the separator.
    return " ".join(text.replace("/", "-").split())[:200] or "untitled"


def _titled_by_its_heading(parsed: ParseResult) -> bool:
    """Whether the document opens with its only level-1 heading and names itself no other way."""
    items = parsed.sections
    top = [s for s in items if s.heading and s.level <= 1]
    if len(top) != 1 or not items or items[0] is not top[0]:
        return False
    named = " ".join(str(parsed.metadata.get("title") or "").split()).casefold()
    return named in ("", " ".join((top[0].heading or "").split()).casefold())


def build_tree(parsed: ParseResult, *, title: str) -> StructureTree:
    """Nest headings by level (a level-2 heading after a level-1 one is its child).

    A document that opens with its only level-1 heading is titled by it: that heading becomes the
    root, so paths read "Guide/Install" rather than "guide.md/Guide/Install". Not when the
    document names itself otherwise (a front matter's or the PDF's title): the author's title
    stays the root and the heading its first section, so neither is lost.
    """
    items = list(parsed.sections)
    root_heading = _titled_by_its_heading(parsed)
    if root_heading:
        title = items[0].heading or title
    root = Section(path=_segment(title), title=title, level=0, parent=None)
    sections = [root]
    stack = [root]
    pieces: list[str] = []
    cursor = 0

    def append(text: str) -> tuple[int, int]:
        nonlocal cursor
        if pieces:
            cursor += len(SEPARATOR)
        start = cursor
        pieces.append(text)
        cursor += len(text)
        return start, cursor

    taken: set[str] = {root.path}
    for index, item in enumerate(items):
        if index == 0 and root_heading:
            root.heading_start, _ = append(item.heading or "")
            root.heading_page, root.heading_boxes = item.page, _heading_boxes(item)
            if item.page is not None:
                root.pages.add(item.page)
        elif item.heading:
            level = max(1, item.level)
            while len(stack) > 1 and stack[-1].level >= level:
                stack.pop()
            parent = stack[-1]
            path = _unique(f"{parent.path}/{_segment(item.heading)}", taken)
            start, _ = append(item.heading)
            node = Section(path, item.heading, level, parent.path, heading_start=start)
            node.heading_page, node.heading_boxes = item.page, _heading_boxes(item)
            parent.children.append(path)
            sections.append(node)
            stack.append(node)
        if item.content.strip():
            start, end = append(item.content)
            current = stack[-1]
            current.blocks.append(Block(item.content, item.kind, item.page, start, end, item.boxes))
            if item.page is not None:
                current.pages.add(item.page)
        elif item.heading and item.page is not None:
            stack[-1].pages.add(item.page)
    return StructureTree(title, "".join(_joined(pieces)), tuple(sections))


def _heading_boxes(item: TextSection) -> tuple[PageBox, ...]:
    """A parser's boxes locate its content; they are the heading's own only without one."""
    return () if item.content.strip() else item.boxes


def _joined(pieces: list[str]) -> list[str]:
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index:
            out.append(SEPARATOR)
        out.append(piece)
    return out


def _unique(path: str, taken: set[str]) -> str:
    """Two sibling sections with the same heading get "(2)", "(3)": paths key chunk ids."""
    candidate, n = path, 2
    while candidate in taken:
        candidate = f"{path} ({n})"
        n += 1
    taken.add(candidate)
    return candidate
