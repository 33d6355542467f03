"""Each parser on documents the tests generate, in English and Chinese."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pypdfium2 as pdfium
import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.html import HtmlParser
from eagle_rag.ingest.parsers.office import DocxParser, PptxParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.parsers.registry import builtin_parsers, parser_for
from eagle_rag.ingest.parsers.sheets import CsvParser, XlsxParser
from eagle_rag.ingest.parsers.text import JsonParser, MarkdownParser, PlainTextParser
from eagle_rag.plugins.payloads import ParseResult, TextSection
from tests.ingest import documents as docs


def _parse(parser: object, data: bytes, name: str, mime: str, **kw: int) -> ParseResult:
    return parser.parse(ParseContext(data, name, mime, **kw))  # type: ignore[attr-defined,no-any-return]


def _headings(result: ParseResult) -> list[tuple[str | None, int, int | None]]:
    return [(s.heading, s.level, s.page) for s in result.sections if s.heading]


def test_pdf_pages_and_outline_english() -> None:
    result = _parse(PdfParser(), docs.pdf_bytes(), "r.pdf", d.PDF)
    assert _headings(result) == [
        ("Chapter 1 Overview", 1, 1),
        ("1.1 Scope", 2, 2),
        ("Chapter 2 Outlook", 1, 3),
    ]
    bodies = [(s.content, s.page) for s in result.sections if s.content]
    assert bodies[0] == ("Revenue grew in 2023. Margins improved.", 1)
    assert bodies[2][1] == 3
    assert result.metadata["pages"] == 3 and result.metadata["title"] == "Annual Report"


def test_pdf_chinese_text_and_outline() -> None:
    result = _parse(PdfParser(), docs.pdf_bytes(chinese=True), "r.pdf", d.PDF)
    assert _headings(result)[:2] == [(docs.ZH_TITLE, 1, 1), ("1.1 范围", 2, 2)]
    assert any(s.content == docs.ZH_BODY and s.page == 1 for s in result.sections)
    assert any(s.content == docs.ZH_PAGE2 and s.page == 2 for s in result.sections)


def _pdf_with_sections_mid_page() -> bytes:
    """A preface, then two bookmarked sections that start part-way down a page; the second
    section begins on page 2 under the first one's last paragraph."""
    from fpdf import FPDF

    pdf = FPDF()

    def heading(title: str) -> None:
        pdf.start_section(title)
        pdf.set_font("helvetica", style="B", size=16)
        pdf.multi_cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
        pdf.set_font("helvetica", size=12)

    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Preface before any section PREFACEFACT.", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(20)
    heading("1 Introduction")
    pdf.multi_cell(0, 8, "Introduction opens INTROFACT.", new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.multi_cell(0, 8, "Introduction ends here INTROTAIL.", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(30)
    heading("2 Results")
    pdf.multi_cell(0, 8, "Results paragraph RESULTSFACT.", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def test_a_bookmark_opens_its_section_where_it_points_on_the_page() -> None:
    """Every bookmark was put before all of its page's text: the preface and the end of the
    introduction were filed under the section that starts below them."""
    result = _parse(PdfParser(), _pdf_with_sections_mid_page(), "report.pdf", d.PDF)
    order = [s.heading or s.content for s in result.sections]
    assert order == [
        "Preface before any section PREFACEFACT.",
        "1 Introduction",
        "Introduction opens INTROFACT.",
        "Introduction ends here INTROTAIL.",
        "2 Results",
        "Results paragraph RESULTSFACT.",
    ]
    assert _headings(result) == [("1 Introduction", 1, 1), ("2 Results", 1, 2)]


def _outlined_pdf(second_destination: str) -> bytes:
    """A one-page PDF whose outline holds "Intro" (on the page) and "Appendix" at
    ``second_destination``, written by hand: producers write destinations to missing pages."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R /Outlines 4 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        "<< /Type /Outlines /First 5 0 R /Last 6 0 R /Count 2 >>",
        "<< /Title (Intro) /Parent 4 0 R /Next 6 0 R /Dest [3 0 R /XYZ 0 700 0] >>",
        f"<< /Title (Appendix) /Parent 4 0 R /Prev 5 0 R /Dest {second_destination} >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    table = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{table}\n%%EOF\n"
    return out + trailer.encode()


def test_a_bookmark_to_a_missing_page_costs_only_its_height() -> None:
    """Reading its height raised, and the whole outline was dropped with it."""
    from eagle_rag.ingest.parsers.pdf_outline import read_outline

    document = pdfium.PdfDocument(_outlined_pdf("[5 /XYZ 0 300 0]"))
    try:
        marks = [(b.title, b.page, b.top) for b in read_outline(document)]
    finally:
        document.close()
    assert marks[0][:2] == ("Intro", 1) and marks[0][2] is not None
    assert marks[1] == ("Appendix", 6, None)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (docs.encrypted_pdf_bytes(), "encrypted"),
        (docs.pdf_bytes()[:400], "corrupt"),
        (docs.blank_pdf_bytes(), "no text"),
    ],
)
def test_bad_pdfs_fail_with_a_reason(data: bytes, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _parse(PdfParser(), data, "x.pdf", d.PDF)


def test_pdf_page_limit() -> None:
    with pytest.raises(InvalidInputError, match="3 pages \\(limit 2\\)"):
        _parse(PdfParser(), docs.pdf_bytes(), "x.pdf", d.PDF, max_pages=2)


@pytest.mark.parametrize("chinese", [False, True])
def test_docx_headings_lists_and_tables(chinese: bool) -> None:
    result = _parse(DocxParser(), docs.docx_bytes(chinese=chinese), "h.docx", d.DOCX)
    heads = _headings(result)
    assert heads == (
        [(docs.ZH_TITLE, 1, None), ("细则", 2, None)]
        if chinese
        else [
            ("Leave Policy", 1, None),
            ("Details", 2, None),
        ]
    )
    lists = [s.content for s in result.sections if s.kind == "list"]
    assert lists == (["- 第一项", "- 第二项"] if chinese else ["- Annual leave", "- Sick leave"])
    [table] = [s.content for s in result.sections if s.kind == "table"]
    assert table.splitlines()[0] == ("| 类型 | 天数 |" if chinese else "| Type | Days |")
    assert table.splitlines()[1] == "|---|---|"
    assert result.metadata["title"] == ("员工手册" if chinese else "Employee Handbook")


@pytest.mark.parametrize("chinese", [False, True])
def test_pptx_slides_are_sections_with_page_numbers(chinese: bool) -> None:
    result = _parse(PptxParser(), docs.pptx_bytes(chinese=chinese), "d.pptx", d.PPTX)
    titles = ["季度回顾", "展望"] if chinese else ["Quarterly Review", "Outlook"]
    assert _headings(result) == [(titles[0], 1, 1), (titles[1], 1, 2)]
    bodies = [(s.content, s.page) for s in result.sections if s.content and s.kind == "text"]
    assert bodies[0] == (("收入增长了百分之十。" if chinese else "Revenue grew ten percent."), 1)
    [table] = [s for s in result.sections if s.kind == "table"]
    assert table.page == 1 and "| EMEA | 42 |" in table.content


def test_pptx_speaker_notes_are_text_of_their_slide() -> None:
    """The notes often hold the facts behind the bullets (a budget, a date); they were never
    read, so "what hedging budget did the board approve?" found nothing."""
    from pptx import Presentation

    deck = Presentation()
    for title, note in [("Market outlook", "The board approved 4.7 million euros."), ("Risks", "")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = "Demand grows"
        if note:
            slide.notes_slide.notes_text_frame.text = note
    out = io.BytesIO()
    deck.save(out)
    result = _parse(PptxParser(), out.getvalue(), "deck.pptx", d.PPTX)
    texts = [(s.content, s.page) for s in result.sections if s.content]
    assert texts == [
        ("Demand grows", 1),
        ("Speaker notes: The board approved 4.7 million euros.", 1),
        ("Demand grows", 2),
    ]


@pytest.mark.parametrize("chinese", [False, True])
def test_xlsx_sheets_become_tables(chinese: bool) -> None:
    result = _parse(XlsxParser(), docs.xlsx_bytes(chinese=chinese), "s.xlsx", d.XLSX)
    assert [h for h, _, _ in _headings(result)] == ["销售" if chinese else "Sales", "Costs"]
    first = next(s.content for s in result.sections if s.kind == "table")
    assert first.splitlines() == (
        ["| 地区 | 金额 |", "|---|---|", "| 华北 | 100 |", "| 华南 | 200 |"]
        if chinese
        else ["| Region | Amount |", "|---|---|", "| North | 100 |", "| South | 200 |"]
    )


def test_a_docx_title_paragraph_names_the_document_instead_of_a_section() -> None:
    """The Title style was a level-1 section beside Heading 1, empty, under the file's stem."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Document1"  # a template's, never shown
    document.add_heading("Solar Inverter Handbook", level=0)  # the Title style
    document.add_heading("Installation", level=1)
    document.add_paragraph("Mount the inverter on a wall.")
    document.add_heading("Wiring", level=2)
    document.add_paragraph("Use copper cables.")
    out = io.BytesIO()
    document.save(out)
    result = _parse(DocxParser(), out.getvalue(), "handbook.docx", d.DOCX)
    assert result.metadata["title"] == "Solar Inverter Handbook"
    assert _headings(result) == [("Installation", 1, None), ("Wiring", 2, None)]


def test_a_docx_cell_merged_across_columns_is_written_once() -> None:
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = "Quarterly egret census"
    for column, text in enumerate(("Site", "Count", "Year")):
        table.cell(1, column).text = text
    out = io.BytesIO()
    document.save(out)
    result = _parse(DocxParser(), out.getvalue(), "census.docx", d.DOCX)
    [found] = [s for s in result.sections if s.kind == "table"]
    assert found.content.splitlines()[0] == "| Quarterly egret census |  |  |"


def test_a_docx_cell_spanning_a_million_columns_is_read_once() -> None:
    """An 875-byte DOCX whose cell spans 1,000,000 columns was listed once per column: 3 MB of
    empty cells and 490,000 chunks."""
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "wide"
    table.cell(1, 0).text = "a"
    table.cell(1, 1).text = "b"
    span = table.rows[0]._tr.tc_lst[0].get_or_add_tcPr()
    span.append(
        span.makeelement(docx.oxml.ns.qn("w:gridSpan"), {docx.oxml.ns.qn("w:val"): "1000000"})
    )
    out = io.BytesIO()
    document.save(out)
    result = _parse(DocxParser(), out.getvalue(), "wide.docx", d.DOCX)
    [found] = [s for s in result.sections if s.kind == "table"]
    assert found.content.splitlines()[0] == "| wide |  |"
    assert len(found.content) < 100


def test_xlsx_columns_empty_in_every_row_are_left_out() -> None:
    """A 2 KB sheet with values in columns A and XFD only was a table 16,384 columns wide:
    12,000 embedding batches."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in range(1, 51):
        sheet.cell(row=row, column=1, value=f"r{row}")
        sheet.cell(row=row, column=16384, value="e")
    sheet.cell(row=2, column=3, value="c")
    out = io.BytesIO()
    workbook.save(out)
    result = _parse(XlsxParser(), out.getvalue(), "sparse.xlsx", d.XLSX)
    [found] = [s for s in result.sections if s.kind == "table"]
    lines = found.content.splitlines()
    assert lines[:4] == ["| r1 |  | e |", "|---|---|---|", "| r2 | c | e |", "| r3 |  | e |"]
    assert len(found.content) < 1000


def test_xlsx_formulas_without_a_cached_value_show_the_formula() -> None:
    """openpyxl, pandas and other writers cache no values: the Total column came out empty."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Team", "Q1", "Q2", "Total"])
    sheet.append(["Engineering", 100, 200, "=B2+C2"])
    out = io.BytesIO()
    workbook.save(out)
    result = _parse(XlsxParser(), out.getvalue(), "budget.xlsx", d.XLSX)
    [found] = [s for s in result.sections if s.kind == "table"]
    assert found.content.splitlines()[-1] == "| Engineering | 100 | 200 | =B2+C2 |"


def test_csv_with_semicolons_and_pipes_in_cells() -> None:
    result = _parse(CsvParser(), "名称;值\nA|B;1\n".encode(), "t.csv", d.CSV)
    assert result.sections[0].content.splitlines() == [
        "| 名称 | 值 |",
        "|---|---|",
        "| A\\|B | 1 |",
    ]


def test_markdown_structure() -> None:
    result = _parse(MarkdownParser(), docs.MARKDOWN.encode(), "g.md", d.MARKDOWN)
    assert _headings(result) == [("Eagle Guide", 1, None), ("Install", 2, None), ("检索", 2, None)]
    kinds = [s.kind for s in result.sections if s.content]
    assert kinds == ["text", "text", "list", "text", "table"]


def test_markdown_front_matter_is_no_heading_and_gives_the_title() -> None:
    """CommonMark reads `---` front matter as a rule and a setext heading: the document got a
    section named "title: Project Heron author: QA tags: [a, b]"."""
    text = "---\ntitle: 'Project Heron'\nauthor: QA\ntags: [a, b]\n---\n" + docs.MARKDOWN
    result = _parse(MarkdownParser(), text.encode(), "notes.md", d.MARKDOWN)
    assert _headings(result) == [("Eagle Guide", 1, None), ("Install", 2, None), ("检索", 2, None)]
    assert result.metadata["title"] == "Project Heron"
    assert "author" not in result.text
    with pytest.raises(InvalidInputError, match="no text"):  # front matter and nothing else
        _parse(MarkdownParser(), b"---\ntitle: Only\n---\n", "only.md", d.MARKDOWN)


def test_html_keeps_main_content_and_drops_chrome() -> None:
    result = _parse(HtmlParser(), docs.HTML.encode(), "p.html", d.HTML)
    assert _headings(result) == [("Eagle Docs", 1, None), ("检索", 2, None)]
    text = result.text
    assert "data layer for agents" in text and "混合检索" in text and "| rrf | 60 |" in text
    for chrome in ("Menu item", "Copyright footer", "secret"):
        assert chrome not in text
    assert result.metadata["title"] == "Eagle Docs"


def test_html_text_outside_paragraph_tags_is_kept_in_reading_order() -> None:
    """Only p, li, h1... were read: a div's or section's own text was dropped at any depth,
    and a page written in divs alone was refused as having no readable content."""
    page = (
        "<html><body><article><h1>Release notes</h1>"
        "<div>The firmware <b>2.1</b> fixes the over<i>heating</i> fault.<br>Install it before"
        " June.<!-- not text --></div><section>Section text without p tags."
        "<p>Only this is in a p tag.</p>And text after it.</section>"
        "<ul><li>An item <p>with a paragraph</p></li></ul></article></body></html>"
    )
    result = _parse(HtmlParser(), page.encode(), "r.html", d.HTML)
    assert [(s.heading, s.content) for s in result.sections] == [
        ("Release notes", ""),
        (None, "The firmware 2.1 fixes the overheating fault. Install it before June."),
        (None, "Section text without p tags."),
        (None, "Only this is in a p tag."),
        (None, "And text after it."),
        (None, "- An item with a paragraph"),
    ]
    deep = "<html><body>" + "<div>" * 3000 + "deep text" + "</div>" * 3000 + "</body></html>"
    assert _parse(HtmlParser(), deep.encode(), "deep.html", d.HTML).text == "deep text"


def test_json_keys_become_sections_and_records_a_table() -> None:
    for empty in (b"{}", b"[]", b"null", b'""'):  # "[]" was indexed as a code chunk "[]"
        assert _parse(JsonParser(), empty, "e.json", d.JSON).sections == ()
    result = _parse(JsonParser(), docs.JSON_DOC.encode(), "d.json", d.JSON)
    assert [h for h, _, _ in _headings(result)] == ["product", "features"]
    [table] = [s for s in result.sections if s.kind == "table"]
    assert "| hybrid | 中文 |" in table.content


def test_json_literals_read_as_the_file_wrote_them() -> None:
    data = b'{"flag": false, "missing": null, "on": true, '
    data += b'"rows": [{"a": null, "b": true}, {"a": 1.5}]}'
    result = _parse(JsonParser(), data, "d.json", d.JSON)
    texts = [s.content for s in result.sections if s.content]
    assert texts[:3] == ["false", "null", "true"]  # were Python's "False", "None", "True"
    assert "| null | true |" in texts[3] and "| 1.5 |  |" in texts[3]


def test_plain_text_paragraphs() -> None:
    result = _parse(
        PlainTextParser(), "第一段。\n\n\nSecond paragraph.\n".encode(), "t.txt", d.TEXT
    )
    assert [s.content for s in result.sections] == ["第一段。", "Second paragraph."]


@pytest.mark.parametrize(
    ("parser", "data", "mime", "match"),
    [
        (JsonParser(), b'{"a": ', d.JSON, "malformed"),
        (JsonParser(), b'{"a": ' * 5000 + b"1" + b"}" * 5000, d.JSON, "nested too deeply"),
        (PlainTextParser(), b"   \n ", d.TEXT, "no text"),
        (HtmlParser(), b"<html><body><script>x</script></body></html>", d.HTML, "no readable"),
        (DocxParser(), docs.xlsx_bytes(), d.DOCX, "corrupt"),
        (XlsxParser(), b"PK\x03\x04broken", d.XLSX, "corrupt"),
    ],
)
def test_corrupt_or_empty_inputs_fail_with_a_reason(
    parser: object, data: bytes, mime: str, match: str
) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _parse(parser, data, "x", mime)


def test_every_supported_type_has_exactly_one_builtin_parser() -> None:
    parsers = builtin_parsers()
    for mime in sorted(d.BINARY_TYPES | d.TEXT_TYPES):
        assert mime in parser_for(mime, parsers).supported_mime_types
    with pytest.raises(InvalidInputError, match="no parser handles image/gif"):
        parser_for("image/gif", parsers)


def test_a_plugin_parser_overrides_core_for_its_type() -> None:
    class MarkdownPlus:
        name = "md-plus"
        supported_mime_types = (d.MARKDOWN,)

        def parse(self, context: ParseContext) -> ParseResult:
            return ParseResult("x", (TextSection("x"),))

    assert parser_for(d.MARKDOWN, [*builtin_parsers(), MarkdownPlus()]).name == "md-plus"


def test_pptx_slide_limit() -> None:
    with pytest.raises(InvalidInputError, match="2 slides \\(limit 1\\)"):
        _parse(PptxParser(), docs.pptx_bytes(), "d.pptx", d.PPTX, max_pages=1)


def _docx(build: Callable[[Any], None]) -> bytes:
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xml(text: str) -> Any:
    """A WordprocessingML element written without its namespace declaration."""
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    return parse_xml(f"<w:wrapper {nsdecls('w')}>{text}</w:wrapper>")[0]


def test_docx_content_controls_and_tracked_insertions_are_text() -> None:
    """A form's body inside a content control failed as "no text"; an inline control's value
    and a tracked insertion were dropped (python-docx reads only plain runs and links)."""

    def build(document: Any) -> None:
        body = document.element.body
        body.insert(
            0,
            _xml(
                '<w:sdt><w:sdtContent><w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr>'
                "<w:r><w:t>Lease terms</w:t></w:r></w:p>"
                "<w:p><w:r><w:t>The tenant pays monthly.</w:t></w:r></w:p></w:sdtContent></w:sdt>"
            ),
        )
        paragraph = document.add_paragraph("Tenant: ")
        paragraph._p.append(
            _xml("<w:sdt><w:sdtContent><w:r><w:t>Ada Lovelace</w:t></w:r></w:sdtContent></w:sdt>")
        )
        revised = document.add_paragraph("Rent is ")
        revised._p.append(
            _xml('<w:ins w:id="1" w:author="qa"><w:r><w:t>950 euros </w:t></w:r></w:ins>')
        )
        revised._p.append(
            _xml(
                '<w:del w:id="2" w:author="qa"><w:r><w:delText>900 euros </w:delText></w:r></w:del>'
            )
        )
        revised.add_run("a month.")

    result = _parse(DocxParser(), _docx(build), "lease.docx", d.DOCX)
    assert _headings(result) == [("Lease terms", 1, None)]
    assert [s.content for s in result.sections if s.content] == [
        "The tenant pays monthly.",
        "Tenant: Ada Lovelace",
        "Rent is 950 euros a month.",
    ]


def test_docx_text_boxes_and_tables_nested_in_a_cell_are_text() -> None:
    """A text box (written by Word twice: drawing and VML fallback) and a table inside a cell
    were lost; the box is read once, after the paragraph that anchors it."""
    box = "<w:txbxContent><w:p><w:r><w:t>Call 555-0100 for help.</w:t></w:r></w:p></w:txbxContent>"
    alternate = (
        '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
        ' xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"'
        ' xmlns:v="urn:schemas-microsoft-com:vml">'
        f"<mc:Choice Requires='wps'><w:drawing><wps:txbx>{box}</wps:txbx></w:drawing></mc:Choice>"
        f"<mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox></v:shape></w:pict>"
        "</mc:Fallback></mc:AlternateContent>"
    )

    def build(document: Any) -> None:
        anchor = document.add_paragraph("Support")
        anchor.runs[0]._r.append(_xml(alternate))
        table = document.add_table(rows=2, cols=2)
        table.cell(0, 0).text, table.cell(0, 1).text = "Plan", "Prices"
        table.cell(1, 0).text = "Pro"
        inner = table.cell(1, 1).add_table(rows=2, cols=2)
        for row, (term, price) in enumerate([("Monthly", "12 euros"), ("Yearly", "120 euros")]):
            inner.cell(row, 0).text, inner.cell(row, 1).text = term, price

    result = _parse(DocxParser(), _docx(build), "plans.docx", d.DOCX)
    texts = [s.content for s in result.sections if s.kind == "text"]
    assert texts == ["Support", "Call 555-0100 for help."]
    [table] = [s.content for s in result.sections if s.kind == "table"]
    assert table.splitlines()[-1] == "| Pro | Monthly; 12 euros / Yearly; 120 euros |"


def _notes_part(document: Any, kind: str, notes: dict[str, str]) -> None:
    """A footnotes or endnotes part as Word writes it (separators first); python-docx writes
    neither."""
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml.ns import nsdecls

    body = "".join(
        f'<w:{kind} w:id="{key}"><w:p><w:r><w:{kind}Ref/></w:r>'
        f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>'
        for key, text in notes.items()
    )
    separator = (
        f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
    )
    xml = f"<w:{kind}s {nsdecls('w')}>{separator}{body}</w:{kind}s>"
    content_type = f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml"
    part = Part(PackURI(f"/word/{kind}s.xml"), content_type, xml.encode(), document.part.package)
    document.part.relate_to(
        part, f"http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}s"
    )


def test_docx_footnotes_and_endnotes_follow_the_paragraph_that_refers_to_them() -> None:
    """Notes were never read: the source of a claim was not searchable."""

    def build(document: Any) -> None:
        _notes_part(document, "footnote", {"7": "Internal audit, 2023.", "8": "Unused note."})
        _notes_part(document, "endnote", {"2": "Figures in euros."})
        claim = document.add_paragraph("Costs fell by a third.")
        claim._p.append(_xml('<w:r><w:footnoteReference w:id="7"/></w:r>'))
        claim._p.append(_xml('<w:r><w:endnoteReference w:id="2"/></w:r>'))
        document.add_paragraph("Staff grew.")

    result = _parse(DocxParser(), _docx(build), "audit.docx", d.DOCX)
    assert [s.content for s in result.sections] == [
        "Costs fell by a third.",
        "Footnote 1: Internal audit, 2023.",
        "Endnote 1: Figures in euros.",
        "Staff grew.",
    ]


def test_docx_headings_by_a_style_based_on_a_heading_or_by_outline_level() -> None:
    """Corporate templates name their own heading styles (based on Heading N) or set an
    outline level; both were body text, so the document had no sections."""
    from docx.enum.style import WD_STYLE_TYPE

    def build(document: Any) -> None:
        corporate = document.styles.add_style("Corp Heading", WD_STYLE_TYPE.PARAGRAPH)
        corporate.base_style = document.styles["Heading 2"]
        chapter = document.styles.add_style("Corp Chapter", WD_STYLE_TYPE.PARAGRAPH)
        chapter.base_style = corporate  # two steps from Heading 2
        document.add_paragraph("Scope", style="Corp Chapter")
        outlined = document.add_paragraph("Terms")
        outlined._p.get_or_add_pPr().append(_xml('<w:outlineLvl w:val="0"/>'))
        demoted = document.add_paragraph("Looks like a heading", style="Heading 1")
        demoted._p.get_or_add_pPr().append(_xml('<w:outlineLvl w:val="9"/>'))

    result = _parse(DocxParser(), _docx(build), "contract.docx", d.DOCX)
    assert _headings(result) == [("Scope", 2, None), ("Terms", 1, None)]
    assert [s.content for s in result.sections if s.content] == ["Looks like a heading"]


def test_pptx_shapes_are_read_top_to_bottom_and_charts_are_text() -> None:
    """Shapes came in drawing order (a box added last at the top was read last) and a chart
    gave nothing: its title, series and categories are what a question names."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Results"
    slide.shapes.add_textbox(Inches(1), Inches(6), Inches(4), Inches(1)).text = "Footnote box"
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(5), Inches(2), Inches(3), Inches(1)).text = "Right"
    group.shapes.add_textbox(Inches(1), Inches(2), Inches(3), Inches(1)).text = "Left"
    data = CategoryChartData()
    data.categories = ["North", "South"]
    data.add_series("Revenue", (4.0, 5.0))
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(3), Inches(6), Inches(2), data
    )
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Sales by region"
    out = io.BytesIO()
    deck.save(out)
    result = _parse(PptxParser(), out.getvalue(), "results.pptx", d.PPTX)
    assert [s.content for s in result.sections if s.content] == [
        "Left",
        "Right",
        "Chart: Sales by region\nSeries: Revenue\nCategories: North, South",
        "Footnote box",
    ]


def test_docx_list_items_keep_their_numbers_and_nesting() -> None:
    """Every item was "- item": the steps of a procedure lost their numbers and sub-items
    their place under an item."""

    def build(document: Any) -> None:
        numbering = document.part.numbering_part.element
        levels = "".join(
            f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="{fmt}"/>'
            f'<w:lvlText w:val="{text}"/></w:lvl>'
            for level, fmt, text in [(0, "decimal", "%1."), (1, "lowerLetter", "%2)")]
        )
        numbering.insert(0, _xml(f'<w:abstractNum w:abstractNumId="90">{levels}</w:abstractNum>'))
        numbering.append(_xml('<w:num w:numId="90"><w:abstractNumId w:val="90"/></w:num>'))
        for level, text in [(0, "Unplug"), (1, "Wait"), (1, "Check"), (0, "Open"), (1, "Lift")]:
            item = document.add_paragraph(text)
            item._p.get_or_add_pPr().append(
                _xml(f'<w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="90"/></w:numPr>')
            )
        document.add_paragraph("Report", style="List Number")
        document.add_paragraph("by mail", style="List Bullet 2")
        document.add_paragraph("Close", style="List Number")

    result = _parse(DocxParser(), _docx(build), "steps.docx", d.DOCX)
    assert [s.content for s in result.sections if s.kind == "list"] == [
        "1. Unplug",
        "  a) Wait",
        "  b) Check",
        "2. Open",
        "  a) Lift",
        "1. Report",
        "  - by mail",
        "2. Close",
    ]


def test_docx_list_levels_and_starts_a_file_makes_up_are_bounded() -> None:
    """ilvl="50000000" made a 100 MB mark per item, and a start of 10**12 in roman numerals
    was built one symbol at a time."""

    def build(document: Any) -> None:
        numbering = document.part.numbering_part.element
        level = (
            '<w:lvl w:ilvl="0"><w:start w:val="1000000000000"/>'
            '<w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>'
        )
        numbering.insert(0, _xml(f'<w:abstractNum w:abstractNumId="92">{level}</w:abstractNum>'))
        numbering.append(_xml('<w:num w:numId="92"><w:abstractNumId w:val="92"/></w:num>'))
        for ilvl in ("0", "50000000"):
            item = document.add_paragraph("Item")
            item._p.get_or_add_pPr().append(
                _xml(f'<w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="92"/></w:numPr>')
            )

    result = _parse(DocxParser(), _docx(build), "odd.docx", d.DOCX)
    items = [s.content for s in result.sections if s.kind == "list"]
    assert items[0] == "I. Item"  # counted from 1
    assert len(items[1]) < 40 and items[1].endswith("Item")


def test_docx_numbered_headings_keep_their_numbers() -> None:
    """A heading numbered by Word ("2.1 Scope", from its style's list) lost its number: the
    section a contract or a standard is cited by."""

    def build(document: Any) -> None:
        numbering = document.part.numbering_part.element
        levels = "".join(
            f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
            f'<w:lvlText w:val="{text}"/></w:lvl>'
            for level, text in [(0, "%1"), (1, "%1.%2")]
        )
        numbering.insert(0, _xml(f'<w:abstractNum w:abstractNumId="91">{levels}</w:abstractNum>'))
        numbering.append(_xml('<w:num w:numId="91"><w:abstractNumId w:val="91"/></w:num>'))
        for style, level in (("Heading 1", 0), ("Heading 2", 1)):
            document.styles[style].element.get_or_add_pPr().append(
                _xml(f'<w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="91"/></w:numPr>')
            )
        for title, level in [("Terms", 1), ("Scope", 2), ("Fees", 2), ("Exit", 1), ("Notice", 2)]:
            document.add_heading(title, level)
            document.add_paragraph(f"About {title.lower()}.")

    result = _parse(DocxParser(), _docx(build), "contract.docx", d.DOCX)
    assert [h for h, _, _ in _headings(result)] == [
        "1 Terms",
        "1.1 Scope",
        "1.2 Fees",
        "2 Exit",
        "2.1 Notice",
    ]


def test_pptx_bullet_levels_are_indented() -> None:
    """Sub-bullets were flattened to the level of the points they belong to."""
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Plan"
    frame = slide.placeholders[1].text_frame
    frame.text = "Hire"
    for text, level in [("two engineers", 1), ("in Lyon", 2), ("Train", 0)]:
        paragraph = frame.add_paragraph()
        paragraph.text, paragraph.level = text, level
    out = io.BytesIO()
    deck.save(out)
    result = _parse(PptxParser(), out.getvalue(), "plan.pptx", d.PPTX)
    [body] = [s.content for s in result.sections if s.content]
    assert body == "Hire\n  two engineers\n    in Lyon\nTrain"


def test_xlsx_with_a_damaged_sheet_is_refused_as_corrupt() -> None:
    """openpyxl raised a bare ValueError reading a sheet with a merge ref like "A1:" (the task
    failed as a crash); the workbook is refused as corrupt, naming the sheet."""
    import zipfile

    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet["A1"] = "Quarterly report"
    sheet.merge_cells("A1:C1")
    sheet.append(["Metric", "Value"])
    sheet.append(["Growth", 5])
    saved = io.BytesIO()
    workbook.save(saved)
    damaged = io.BytesIO()
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(damaged, "w") as target:
        for name in source.namelist():
            part = source.read(name)
            if name == "xl/worksheets/sheet1.xml":
                part = part.replace(b'ref="A1:C1"', b'ref="A1:"')
            target.writestr(name, part)
    with pytest.raises(InvalidInputError, match="corrupt: sheet 'Sheet' cannot be read"):
        _parse(XlsxParser(), damaged.getvalue(), "report.xlsx", d.XLSX)


def test_xlsx_cells_show_their_format_and_a_merged_title_names_the_table() -> None:
    """A title merged over the table was its header (the real header became a data row), and
    cells showed stored values: 0.05 for 5%, 1234.5 for $1,234.50, dates at midnight."""
    import datetime as dt

    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Q1"
    sheet["A1"] = "Quarterly  report"
    sheet.merge_cells("A1:C1")
    sheet.append([])
    sheet.append(["Metric", "Value", "Date"])
    sheet.append(["Growth", 0.05, dt.date(2024, 3, 31)])
    sheet.append(["Price", 1234.5, dt.datetime(2024, 4, 1, 13, 45)])
    sheet.append(["Ratio", 1.5e-7, None])
    sheet["B4"].number_format = "0%"
    sheet["C4"].number_format = "yyyy-mm-dd"
    sheet["B5"].number_format = "$#,##0.00"
    sheet["C5"].number_format = "yyyy-mm-dd h:mm"
    sheet["B6"].number_format = "0.00E+00"  # scientific: not shown as formatted
    out = io.BytesIO()
    workbook.save(out)
    result = _parse(XlsxParser(), out.getvalue(), "report.xlsx", d.XLSX)
    assert _headings(result) == [("Q1", 1, None), ("Quarterly report", 2, None)]
    [table] = [s.content for s in result.sections if s.kind == "table"]
    assert table.splitlines() == [
        "| Metric | Value | Date |",
        "|---|---|---|",
        "| Growth | 5% | 2024-03-31 |",
        "| Price | $1,234.50 | 2024-04-01 13:45 |",
        "| Ratio | 1.5e-07 |  |",
    ]
