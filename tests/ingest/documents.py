"""Real documents for parser and pipeline tests, generated with the libraries users' tools use."""

from __future__ import annotations

import io
import json
import zipfile
from functools import cache

ZH_TITLE = "第一章 总则"
ZH_BODY = "北京大学是中国著名的高等学府。它位于北京市海淀区。"
ZH_PAGE2 = "第二页的内容：研究生院的招生政策。"


@cache
def pdf_bytes(*, chinese: bool = False) -> bytes:
    """Three pages, an outline (two levels) and a title; Chinese uses the bundled Noto CJK font."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Annual Report")
    if chinese:
        import noto_cjk_sans_jp_regular as font

        pdf.add_font("cjk", fname=str(font.FONT_PATH))
        pdf.set_font("cjk", size=12)
        pages = [
            (ZH_TITLE, 0, ZH_BODY),
            ("1.1 范围", 1, ZH_PAGE2),
            ("第二章 附则", 0, "附则内容。"),
        ]
    else:
        pdf.set_font("helvetica", size=12)
        pages = [
            ("Chapter 1 Overview", 0, "Revenue grew in 2023. Margins improved."),
            ("1.1 Scope", 1, "This section covers the scope of the audit."),
            ("Chapter 2 Outlook", 0, "We expect steady demand next year."),
        ]
    for title, level, body in pages:
        pdf.add_page()
        pdf.start_section(title, level=level)
        pdf.multi_cell(0, 8, body)
    return bytes(pdf.output())


def encrypted_pdf_bytes() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Top secret")
    return bytes(pdf.output())


def blank_pdf_bytes() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    return bytes(pdf.output())


def docx_bytes(*, chinese: bool = False) -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = "员工手册" if chinese else "Employee Handbook"
    document.add_heading(ZH_TITLE if chinese else "Leave Policy", level=1)
    document.add_paragraph(ZH_BODY if chinese else "Employees get 25 days of paid leave.")
    document.add_paragraph("第一项" if chinese else "Annual leave", style="List Bullet")
    document.add_paragraph("第二项" if chinese else "Sick leave", style="List Bullet")
    document.add_heading("细则" if chinese else "Details", level=2)
    table = document.add_table(rows=3, cols=2)
    rows = (
        [("类型", "天数"), ("年假", "25"), ("病假", "10")]
        if chinese
        else [
            ("Type", "Days"),
            ("Annual", "25"),
            ("Sick", "10"),
        ]
    )
    for r, (a, b) in enumerate(rows):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes(*, chinese: bool = False) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slides = (
        [("季度回顾", "收入增长了百分之十。"), ("展望", "明年继续扩张。")]
        if chinese
        else [("Quarterly Review", "Revenue grew ten percent."), ("Outlook", "We keep expanding.")]
    )
    for title, body in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    table = deck.slides[0].shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "Sales"
    table.cell(1, 0).text, table.cell(1, 1).text = "EMEA", "42"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_bytes(*, chinese: bool = False) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "销售" if chinese else "Sales"
    sheet.append(["地区", "金额"] if chinese else ["Region", "Amount"])
    sheet.append(["华北", 100] if chinese else ["North", 100])
    sheet.append(["华南", 200] if chinese else ["South", 200])
    second = workbook.create_sheet("Costs")
    second.append(["Item", "Cost"])
    second.append(["Rent", 50])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


MARKDOWN = """# Eagle Guide

Eagle-RAG retrieves cited evidence. It fuses dense and sparse search.

## Install

Run `make run` to start the service.

- Python 3.11
- make

## 检索

混合检索结合了稠密向量和稀疏向量。北京大学的研究人员也在使用。

| Mode | Uses |
|---|---|
| dense | embeddings |
| sparse | BM25 |
"""

HTML = """<!doctype html><html><head><title>Eagle Docs</title></head><body>
<nav><a href="/">Home</a> | <a href="/x">Menu item</a></nav>
<main><h1>Eagle Docs</h1><p>Eagle-RAG is a data layer for agents.</p>
<h2>检索</h2><p>混合检索结合稠密与稀疏。</p><ul><li>Dense</li><li>Sparse</li></ul>
<table><tr><th>k</th><th>v</th></tr><tr><td>rrf</td><td>60</td></tr></table></main>
<footer>Copyright footer text</footer><script>var secret = 1;</script></body></html>"""

JSON_DOC = json.dumps(
    {
        "product": "Eagle",
        "features": [{"name": "hybrid", "lang": "中文"}, {"name": "mcp", "lang": "en"}],
    },
    ensure_ascii=False,
)


def zip_bomb_docx() -> bytes:
    """A DOCX-shaped archive whose one entry expands from kilobytes to 50 MB."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"0" * (50 * 1024 * 1024))
    return out.getvalue()


def many_entries_xlsx(entries: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
        for i in range(entries):
            archive.writestr(f"xl/junk/{i}.xml", "x")
    return out.getvalue()


def without_root(pdf: bytes) -> bytes:
    """A damaged PDF PDFium refuses: the trailer loses its /Root (same length, so every offset
    stays right); pypdf still reads it."""
    at = pdf.rindex(b"/Root")
    return pdf[:at] + b"/Roo " + pdf[at + 5 :]
