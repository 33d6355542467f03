"""HTML: the main content (``<main>``/``<article>`` or the body without navigation chrome)."""

from __future__ import annotations

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
        found = soup.find("main") or soup.find("article") or soup.body
        root = found if isinstance(found, Tag) else soup
        sections = _sections(root)
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


def _sections(root: Tag) -> list[TextSection]:
    """The outermost block elements in document order (a <p> inside a <li> is read with the
    <li>), and between them the text no block holds: a ``<div>``'s or ``<section>``'s own text
    was dropped, at any depth, and a page written that way read as "no readable content".
    Loose text is one paragraph per container (what inline elements and ``<br>`` hold
    belongs to their container's); the walk is flat, so no nesting depth can overflow it."""
    sections: list[TextSection] = []
    loose: list[str] = []
    owner: Tag | None = None

    def flush() -> None:
        text = " ".join("".join(loose).split())
        loose.clear()
        if text:
            sections.append(TextSection(text))

    skip_to: PageElement | None = None  # the last node of a block already read whole
    for node in root.descendants:
        if skip_to is not None:
            if node is skip_to:
                skip_to = None
            continue
        if isinstance(node, Tag):
            if node.name in _BLOCKS:
                flush()
                owner = None
                if node.name == "table":
                    sections.extend(table_sections(node))
                else:
                    section = _section(node)
                    if section is not None:
                        sections.append(section)
                skip_to = _last_descendant(node)
            elif node.name == "br":
                loose.append("\n")
            continue
        if type(node) is not NavigableString:  # comments, CDATA, doctypes
            continue
        home = _container(node)
        if home is not owner:
            flush()
            owner = home
        loose.append(str(node))
    flush()
    return sections


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
    if name == "li":
        return TextSection(f"- {text}", kind="list")
    return TextSection(text)
