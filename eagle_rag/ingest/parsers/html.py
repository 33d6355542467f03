"""HTML: the main content (``<main>``/``<article>`` or the body without navigation chrome)."""

from __future__ import annotations

from bs4 import BeautifulSoup, Tag

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import HTML, decode_text
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table, result
from eagle_rag.plugins.payloads import ParseResult, TextSection

_CHROME = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "template")
_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "table", "blockquote", "dd", "dt")


class HtmlParser:
    name = "html"
    supported_mime_types: tuple[str, ...] = (HTML,)

    def parse(self, context: ParseContext) -> ParseResult:
        text = decode_text(context.data)
        if text is None:
            raise InvalidInputError(
                "the HTML file is not decodable text", filename=context.filename
            )
        soup = BeautifulSoup(text, "html.parser")
        title = soup.title.get_text(" ", strip=True) if soup.title else ""
        for tag in soup.find_all(_CHROME):
            tag.decompose()
        found = soup.find("main") or soup.find("article") or soup.body
        root = found if isinstance(found, Tag) else soup
        sections = [s for s in (_section(el) for el in _blocks(root)) if s is not None]
        if not any(s.content.strip() for s in sections):
            raise InvalidInputError(
                "the HTML page has no readable content", filename=context.filename
            )
        return result(sections, title=title) if title else result(sections)


def _blocks(root: Tag) -> list[Tag]:
    """Outermost block elements in document order (a <p> inside a <li> is read with the <li>)."""
    found = []
    for element in root.find_all(_BLOCKS):
        if element.find_parent(_BLOCKS) is None:
            found.append(element)
    return found


def _section(element: Tag) -> TextSection | None:
    name = element.name
    if name and name[0] == "h" and name[1:].isdigit():
        heading = element.get_text(" ", strip=True)
        return TextSection("", heading=heading, level=int(name[1])) if heading else None
    if name == "table":
        rows = [
            [cell.get_text(" ", strip=True) for cell in row.find_all(("th", "td"))]
            for row in element.find_all("tr")
        ]
        rows = [r for r in rows if any(r)]
        return TextSection(markdown_table(rows), kind="table") if rows else None
    if name == "pre":
        return TextSection(element.get_text().strip("\n"), kind="code")
    text = element.get_text(" ", strip=True)
    if not text:
        return None
    if name == "li":
        return TextSection(f"- {text}", kind="list")
    return TextSection(text)
