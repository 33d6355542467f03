"""The HTML parser on pages built here: what it keeps of forms, charsets, tables and lists."""

from __future__ import annotations

from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.html import HtmlParser
from eagle_rag.plugins.payloads import ParseResult


def _parse(page: str | bytes, name: str = "p.html") -> ParseResult:
    data = page.encode() if isinstance(page, str) else page
    return HtmlParser().parse(ParseContext(data, name, d.HTML))


def test_a_page_inside_a_form_is_read_without_its_controls() -> None:
    """ASP.NET WebForms pages wrap the whole body in one <form>: the page was dropped whole
    ("no readable content"). The controls' values and options are not prose; a search form
    is chrome."""
    page = (
        "<html><body><form method='post' action='./Default.aspx'>"
        "<div><input type='hidden' name='__VIEWSTATE' value='abc'/></div>"
        "<form role='search'><label>Search the site</label><input type='search'></form>"
        "<h1>Leave policy</h1><p>The policy allows 25 days.</p>"
        "<label>Country <select><option>France</option><option>Spain</option></select></label>"
        "<textarea>typed text</textarea><button>Send</button>"
        "</form></body></html>"
    )
    result = _parse(page)
    assert [(s.heading, s.content) for s in result.sections] == [
        ("Leave policy", ""),
        (None, "The policy allows 25 days."),
        (None, "Country"),
    ]
