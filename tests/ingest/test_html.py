"""The HTML parser on pages built here: what it keeps of forms, charsets, tables and lists."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    ("declaration", "codec", "words"),
    [
        ('<meta charset="shift_jis">', "cp932", "東京都の見出し"),
        ("<meta charset=Shift_JIS>", "cp932", "日本語の段落です"),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
            "cp1251",
            "Привет мир",
        ),
        ("<meta charset='koi8-r'/>", "koi8-r", "Заголовок страницы"),
        ('<meta charset="euc-kr">', "cp949", "한국어 문서"),
    ],
)
def test_the_charset_a_page_declares_is_honoured(declaration: str, codec: str, words: str) -> None:
    """The declaration was ignored and detection guessed: Shift_JIS read as GB18030 and
    Windows-1251 as Windows-1252, stored garbled."""
    page = f"<html><head>{declaration}<title>{words}</title></head><body><p>{words}</p>"
    result = _parse((page + "</body></html>").encode(codec))
    assert result.text == words and result.metadata["title"] == words


def test_a_page_without_a_declaration_is_read_in_the_legacy_charset_of_its_language() -> None:
    """A Shift_JIS page without ``<meta charset>`` was read as GB18030."""
    page = "<html><body><p>富士山は日本で一番高い山です。</p></body></html>"
    assert _parse(page.encode("shift_jis")).text == "富士山は日本で一番高い山です。"


@pytest.mark.parametrize("label", ["no-such-charset", "utf-16", "base64", "rot13", "undefined"])
def test_a_bogus_or_impossible_charset_falls_back_to_detection(label: str) -> None:
    page = f"<html><head><meta charset='{label}'></head><body><p>Grüße, 检索</p></body></html>"
    assert _parse(page.encode()).text == "Grüße, 检索"


def test_a_byte_order_mark_beats_the_declared_charset() -> None:
    page = "<html><head><meta charset='windows-1251'></head><body><p>Grüße</p></body></html>"
    assert _parse(b"\xef\xbb\xbf" + page.encode()).text == "Grüße"
    assert _parse(page.encode("utf-16")).text == "Grüße"


def test_a_declaration_the_bytes_contradict_is_ignored() -> None:
    """A page saved as UTF-8 that still says Shift_JIS: most of it cannot be Shift_JIS."""
    words = "Grüße aus München, das ist ein längerer Satz über Äpfel und Öl. " * 3
    page = f"<html><head><meta charset='shift_jis'></head><body><p>{words}</p></body></html>"
    assert _parse(page.encode()).text == words.strip()


def test_an_articles_own_header_and_aside_are_kept_the_pages_are_not() -> None:
    """Every <header> and <aside> was chrome: an article lost its title, byline and callouts."""
    page = (
        "<html><body><header><h1>Site banner</h1></header><aside>Sidebar links</aside>"
        "<main><article><header><h1>Article title</h1><p>By Jane, 2024</p></header>"
        "<p>Article body.</p><aside><p>Callout: never do X.</p></aside>"
        "<footer>Share this</footer></article></main></body></html>"
    )
    result = _parse(page)
    assert [(s.heading, s.content) for s in result.sections] == [
        ("Article title", ""),
        (None, "By Jane, 2024"),
        (None, "Article body."),
        (None, "Callout: never do X."),
    ]
    bare = "<html><body><header>Banner</header><p>Body.</p><aside>Ads</aside></body></html>"
    assert _parse(bare).text == "Body."


def _tables(result: ParseResult) -> list[str]:
    return [s.content for s in result.sections if s.kind == "table"]


def test_spanning_cells_fill_the_slots_they_cover() -> None:
    """rowspan and colspan were ignored: the cells after a spanning one moved a column left."""
    page = (
        "<html><body><table><caption>Quarterly sales</caption>"
        "<thead><tr><th rowspan='2'>Name</th><th colspan='2'>2024</th></tr>"
        "<tr><th>Q1</th><th>Q2</th></tr></thead><tbody>"
        "<tr><td rowspan='2'>Ann</td><td>1</td><td>2</td></tr>"
        "<tr><td>3</td><td>4</td></tr>"
        "<tr><td colspan='2'>Bob, both</td><td>5</td></tr>"
        "<tr><td rowspan='0'>Cy</td><td colspan='x'>6</td><td rowspan='99'>7</td></tr>"
        "<tr><td>8</td></tr></tbody></table></body></html>"
    )
    result = _parse(page)
    assert (result.sections[0].kind, result.sections[0].content) == ("text", "Quarterly sales")
    assert _tables(result) == [
        "| Name | 2024 | 2024 |\n|---|---|---|\n| Name | Q1 | Q2 |\n| Ann | 1 | 2 |\n"
        "| Ann | 3 | 4 |\n| Bob, both | Bob, both | 5 |\n| Cy | 6 | 7 |\n| Cy | 8 | 7 |"
    ]


def test_a_table_in_a_cell_is_read_once_inside_its_cell() -> None:
    """Every <tr> and <td> below the table was its own: an inner table's rows came again as
    rows of the outer table, and its cells as extra columns."""
    page = (
        "<html><body><table><tr><th>Outer</th><th>Other</th></tr>"
        "<tr><td>outer cell<table><tr><td>inner A</td><td>inner B</td></tr></table></td>"
        "<td>o2</td></tr></table></body></html>"
    )
    result = _parse(page)
    assert _tables(result) == ["| Outer | Other |\n|---|---|\n| outer cell inner A inner B | o2 |"]
    assert result.text.count("inner A") == 1


def test_nested_list_items_are_lines_of_their_own_and_ordered_ones_numbered() -> None:
    """A list item was read whole: its nested items ran into its line ("- one two three")."""
    page = (
        "<html><body><ul><li>Install <b>it</b><ul><li>on Linux</li>"
        "<li>on macOS<ol start='3'><li>download</li><li><p>open</p></li></ol></li></ul>"
        "and then run it</li><li>Configure</li></ul>"
        "<ol><li>first</li><li value='7'>seventh</li><li>eighth</li></ol></body></html>"
    )
    result = _parse(page)
    assert [(s.kind, s.content) for s in result.sections] == [
        ("list", "- Install it and then run it"),
        ("list", "  - on Linux"),
        ("list", "  - on macOS"),
        ("list", "    3. download"),
        ("list", "    4. open"),
        ("list", "- Configure"),
        ("list", "1. first"),
        ("list", "7. seventh"),
        ("list", "8. eighth"),
    ]


def test_deeply_nested_lists_are_read_without_recursion() -> None:
    page = "<html><body>" + "<ul><li>item" * 2000 + "</li></ul>" * 2000 + "</body></html>"
    items = [s.content for s in _parse(page).sections]
    assert len(items) == 2000
    assert items[0] == "- item" and items[-1] == " " * 16 + "- item"


def test_every_article_of_a_page_of_articles_is_read() -> None:
    """Only the first <article> was read: a blog index lost every post after the first."""
    page = (
        "<html><body><nav>Home | About</nav>"
        "<article><h2>First post</h2><p>Pumps were serviced FIRSTFACT.</p></article>"
        "<article><h2>Second post</h2><p>Valves were replaced SECONDFACT.</p></article>"
        "<footer>Copyright</footer></body></html>"
    )
    text = _parse(page).text
    assert "FIRSTFACT" in text and "SECONDFACT" in text
    assert "Home" not in text and "Copyright" not in text
    one = "<body><p>Cookie notice.</p><article><p>Only post ONLYFACT.</p></article></body>"
    assert _parse(one).text == "Only post ONLYFACT."  # one article is still the content


def test_spans_cannot_blow_a_small_page_up() -> None:
    """160 KB of <td colspan=1000>x</td> rows made 20 MB of table to chunk and embed; a long
    cell spanning every row below it repeats its text only up to a budget."""
    wide = "<table>" + "<tr><td colspan=1000>x</td></tr>" * 5000 + "</table>"
    assert len(_parse(wide).text) < 100_000
    tall = (
        "<table><tr><td rowspan=0>" + "long words " * 1000 + "</td><td>a</td></tr>"
        + "<tr><td>b</td></tr>" * 2000 + "</table>"
    )  # fmt: skip
    text = _parse(tall).text
    assert len(text) < 1_300_000 and text.count("long words") >= 1000
