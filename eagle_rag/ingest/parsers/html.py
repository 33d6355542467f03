"""HTML: the main content (``<main>``/``<article>`` or the body without navigation chrome)."""

from __future__ import annotations

from collections.abc import Iterator

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import HTML
from eagle_rag.ingest.parsers.base import ParseContext, result
from eagle_rag.ingest.parsers.html_charset import decode_html
from eagle_rag.ingest.parsers.html_tables import table_sections
from eagle_rag.plugins.payloads import ParseResult, TextSection

_CHROME = ("script", "style", "noscript", "nav", "footer", "template", "search")
# The page's banner and sidebars, but inside an <article> or <main> the content's own: the
# article's title and byline, a callout.
_PAGE_PARTS = ("header", "aside")
# Form controls hold values and option lists, not prose. The form around them stays: ASP.NET
# WebForms pages wrap the whole body in one <form>, and dropping it dropped the page.
_CONTROLS = ("input", "select", "button", "textarea", "datalist")
_LISTS = ("ul", "ol", "menu")
# Deeper lists are indented as much: the items stay apart, the text stays small.
_MAX_INDENT = 8
_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "table", "blockquote", "dd", "dt")
# Elements inside a line of text: their words belong to the paragraph around them.
_INLINE = frozenset(
    {
        *("a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "font"),
        *("i", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong"),
        *("sub", "sup", "time", "u", "var", "wbr", "br", "img"),
    }
)


class HtmlParser:
    name = "html"
    supported_mime_types: tuple[str, ...] = (HTML,)

    def parse(self, context: ParseContext) -> ParseResult:
        text = decode_html(context.data)
        if text is None:
            raise InvalidInputError(
                "the HTML file is not decodable text", filename=context.filename
            )
        soup = BeautifulSoup(text, "html.parser")
        title = soup.title.get_text(" ", strip=True) if soup.title else ""
        _drop_chrome(soup)
        # The page's one <main> or <article>; a page of several articles (a blog's index, a
        # news front page) is read whole, or all but its first article were lost.
        articles = soup.find_all("article", limit=2)
        found = soup.find("main") or (articles[0] if len(articles) == 1 else None) or soup.body
        root = found if isinstance(found, Tag) else soup
        sections = _PageReader().read(root)
        if not any(s.content.strip() for s in sections):
            raise InvalidInputError(
                "the HTML page has no readable content", filename=context.filename
            )
        return result(sections, title=title) if title else result(sections)


def _drop_chrome(soup: BeautifulSoup) -> None:
    """Scripts, navigation, the page's banner, sidebars and footers, form controls and search
    forms."""
    for tag in soup.find_all((*_CHROME, *_CONTROLS)):
        tag.decompose()
    for part in soup.find_all(_PAGE_PARTS):
        if not part.decomposed and part.find_parent(("article", "main")) is None:
            part.decompose()
    for form in soup.find_all("form", role="search"):
        form.decompose()


class _PageReader:
    """The outermost block elements in document order (a <p> inside a <li> is read with the
    <li>), and between them the text no block holds: a ``<div>``'s or ``<section>``'s own text
    was dropped, at any depth, and a page written that way read as "no readable content".
    Loose text is one paragraph per container (what inline elements and ``<br>`` hold
    belongs to their container's); the walk is flat, so no nesting depth can overflow it.
    A list item is a line of its own, its nested lists' items lines after it, indented."""

    def __init__(self) -> None:
        self.sections: list[TextSection] = []
        self._loose: list[str] = []
        self._owner: Tag | None = None
        self._read: set[int] = set()  # ids of the nodes list items have read as their own
        self._numbers: dict[int, int] = {}  # id of an <ol> -> the number of its next item
        self._depths: dict[int, int] = {}  # id of a list -> how many lists deep it is

    def read(self, root: Tag) -> list[TextSection]:
        skip_to: PageElement | None = None  # the last node of a block already read whole
        for node in root.descendants:
            if skip_to is not None:
                if node is skip_to:
                    skip_to = None
                continue
            if id(node) in self._read:
                continue
            if isinstance(node, Tag):
                skip_to = self._tag(node)
            elif type(node) is NavigableString:  # not comments, CDATA, doctypes
                self._text(node)
        self._flush()
        return self.sections

    def _tag(self, tag: Tag) -> PageElement | None:
        """Read a block; the last node it read whole, which the walk skips to."""
        if tag.name == "br":
            self._loose.append("\n")
        if tag.name not in _BLOCKS:
            return None
        self._flush()
        self._owner = None
        if tag.name == "li":
            self._list_item(tag)
            return None  # its nested lists are read after it, by the walk
        if tag.name == "table":
            self.sections.extend(table_sections(tag))
        else:
            section = _section(tag)
            if section is not None:
                self.sections.append(section)
        return _last_descendant(tag)

    def _text(self, node: NavigableString) -> None:
        home = _container(node)
        if home is not self._owner:
            self._flush()
            self._owner = home
        self._loose.append(str(node))

    def _flush(self) -> None:
        text = " ".join("".join(self._loose).split())
        self._loose.clear()
        if text:
            self.sections.append(TextSection(text))

    def _list_item(self, item: Tag) -> None:
        marker = self._marker(item)
        words: list[str] = []
        for node in _own_nodes(item):
            self._read.add(id(node))
            if type(node) is NavigableString and node.strip():
                words.append(node.strip())
        if words:
            self.sections.append(TextSection(marker + " ".join(words), kind="list"))

    def _marker(self, item: Tag) -> str:
        """ "- " or an ordered list's "3. ", indented two spaces for each list it is inside."""
        home = _enclosing_list(item)
        if home is None:
            return "- "
        indent = "  " * min(self._depth(home) - 1, _MAX_INDENT)
        if home.name != "ol":
            return f"{indent}- "
        number = _number(item.get("value"))
        if number is None:
            number = self._numbers.get(id(home), _number(home.get("start")))
        number = 1 if number is None else number
        self._numbers[id(home)] = number + 1
        return f"{indent}{number}. "

    def _depth(self, home: Tag) -> int:
        """How many lists deep ``home`` is (1: outermost). Remembered for each list, so deep
        nesting is not walked up again for every item."""
        unknown: list[Tag] = []
        depth = 0
        found: Tag | None = home
        while found is not None:
            known = self._depths.get(id(found))
            if known is not None:
                depth = known
                break
            unknown.append(found)
            found = _enclosing_list(found)
        for tag in reversed(unknown):
            depth += 1
            self._depths[id(tag)] = depth
        return self._depths[id(home)]


def _enclosing_list(tag: Tag) -> Tag | None:
    parent = tag.parent
    while parent is not None and parent.name not in _LISTS:
        parent = parent.parent
    return parent


def _own_nodes(item: Tag) -> Iterator[PageElement]:
    """The nodes of a list item outside the lists nested in it, in document order; those
    lists are not entered (walking them would make deep nesting quadratic)."""
    stack: list[PageElement] = list(reversed(item.contents))
    while stack:
        node = stack.pop()
        if isinstance(node, Tag):
            if node.name in _LISTS:
                continue
            stack.extend(reversed(node.contents))
        yield node


def _number(value: object) -> int | None:
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


def _last_descendant(tag: Tag) -> PageElement | None:
    last: PageElement | None = None
    node: PageElement = tag
    while isinstance(node, Tag) and node.contents:
        node = last = node.contents[-1]
    return last


def _container(node: PageElement) -> Tag | None:
    """The nearest ancestor that is not an inline element: the paragraph the text is part of."""
    parent = node.parent
    while parent is not None and parent.name in _INLINE:
        parent = parent.parent
    return parent


def _section(element: Tag) -> TextSection | None:
    name = element.name
    if name and name[0] == "h" and name[1:].isdigit():
        heading = element.get_text(" ", strip=True)
        return TextSection("", heading=heading, level=int(name[1])) if heading else None
    if name == "pre":
        return TextSection(element.get_text().strip("\n"), kind="code")
    text = element.get_text(" ", strip=True)
    if not text:
        return None
    return TextSection(text)
