"""Text-born PDFs: boxes from the text layer, headings from typography, a second reader."""

from __future__ import annotations

import re
from typing import Any

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import PDF
from eagle_rag.ingest.knowhere.chunker import ChunkingOptions, chunk_tree
from eagle_rag.ingest.knowhere.tree import build_tree
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.plugins.payloads import ParseResult
from tests.ingest import documents as docs
from tests.ingest import scans


def _parse(data: bytes) -> ParseResult:
    return PdfParser().parse(ParseContext(data, "paper.pdf", PDF))


def _paper() -> bytes:
    """A paper without an outline: a 22 pt title, numbered bold headings, 11 pt body."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "B", 22)
    pdf.multi_cell(0, 12, "Soil Moisture in Dry Years", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    body = "Measurements were taken weekly at every site. " * 8
    for heading, text in [
        ("1 Introduction", body),
        ("1.1 Study Area", "The sites lie on a chalk plateau. " * 6),
        ("2 Results", "Moisture fell by a third in July. " * 40),
    ]:
        pdf.set_font("helvetica", "B", 13)
        pdf.multi_cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    return bytes(pdf.output())


def test_headings_come_from_typography_when_there_is_no_outline() -> None:
    parsed = _parse(_paper())
    headings = [(s.heading, s.level) for s in parsed.sections if s.heading]
    assert headings == [
        ("Soil Moisture in Dry Years", 1),
        ("1 Introduction", 2),
        ("1.1 Study Area", 3),
        ("2 Results", 2),
    ]
    tree = build_tree(parsed, title="paper")
    paths = [s.path for s in tree.sections]
    assert paths == [
        "Soil Moisture in Dry Years",
        "Soil Moisture in Dry Years/1 Introduction",
        "Soil Moisture in Dry Years/1 Introduction/1.1 Study Area",
        "Soil Moisture in Dry Years/2 Results",
    ]


def test_body_text_in_one_font_gets_no_invented_headings() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "", 11)
    for n in range(6):
        text = f"Paragraph {n} says something plain about the weather. " * 3
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    parsed = _parse(bytes(pdf.output()))
    assert not [s for s in parsed.sections if s.heading]
    assert len([s for s in parsed.sections if s.content]) == 6  # paragraphs split by their gaps


def _guide(sections: list[tuple[str, str]]) -> bytes:
    """A title in 18 pt bold, then each section's bold 14 pt heading and 11 pt text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.cell(0, 10, "Heat Pump HP-12 Service Guide", new_x="LMARGIN", new_y="NEXT")
    for heading, text in sections:
        pdf.set_font("helvetica", "B", 14)
        pdf.cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def test_a_short_guide_keeps_its_headings() -> None:
    """Four heading lines over three short paragraphs were "too common" to be headings (more
    than 3 and than 30 % of the lines): the guide became one section, its headings glued into
    the text. They are a small share of its text."""
    parsed = _parse(
        _guide(
            [
                ("1 Refrigerant", "The HP-12 uses R32 refrigerant. The factory charge is 1.45 kg."),
                ("2 Maintenance", "Clean the outdoor coil every spring and the filter quarterly."),
                ("3 Fault codes", "Fault F7 is a low-pressure trip. Fault F9 is an open sensor."),
            ]
        )
    )
    assert [(s.heading, s.level) for s in parsed.sections if s.heading] == [
        ("Heat Pump HP-12 Service Guide", 1),
        ("1 Refrigerant", 2),
        ("2 Maintenance", 2),
        ("3 Fault codes", 2),
    ]


def test_a_form_of_bold_labels_gets_no_headings_at_body_size() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    for label, value in [
        ("Applicant", "Jane Doe"),
        ("Department", "Finance"),
        ("Start", "May"),
    ] * 3:
        pdf.set_font("helvetica", "B", 11)
        pdf.cell(0, 6, label, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", "", 11)
        pdf.cell(0, 6, value, new_x="LMARGIN", new_y="NEXT")
    parsed = _parse(bytes(pdf.output()))
    assert not [s for s in parsed.sections if s.heading]


def test_text_layer_boxes_cover_each_line_and_reach_chunks_on_every_page() -> None:
    parsed = _parse(_paper())
    assert parsed.metadata["ocr_pages"] == []
    for section in parsed.sections:
        if section.content:
            assert section.boxes and {b.page for b in section.boxes} == {section.page}
            for box in section.boxes:
                x0, y0, x1, y1 = box.bbox
                assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
                # Each box's span is one printed line of the paragraph.
                assert box.start is not None and box.end is not None
                assert section.content[box.start : box.end].strip()
    results = next(s for s in parsed.sections if s.content.startswith("Moisture fell"))
    assert len(results.boxes) > 5  # a long paragraph: one box per line
    assert sorted(b.bbox[1] for b in results.boxes) == [b.bbox[1] for b in results.boxes]
    tree = build_tree(parsed, title="paper")
    chunks = chunk_tree(
        tree,
        document_id="d",
        kb_name="kb",
        options=ChunkingOptions(chunk_size=40, chunk_overlap=0),
        count_tokens=lambda text: len(text.split()),
    )
    results_chunks = [c for c in chunks if c.path.endswith("2 Results") and c.type == "text"]
    assert len(results_chunks) > 2
    tops = []
    for chunk in results_chunks:
        [box] = chunk.metadata["boxes"]  # one paragraph on one page: one box
        assert box["page"] in chunk.page_nums and len(box["bbox"]) == 4
        tops.append(box["bbox"][1])
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # each chunk its own lines


def test_a_chunk_that_crosses_a_page_keeps_a_box_on_each() -> None:
    long_body = "Every valve is checked before the pump starts. " * 14  # runs onto page 2
    parsed = _parse(scans.text_pdf([("Valves", long_body), ("Pumps", "Pumps are fine.")]))
    assert parsed.metadata["pages"] == 3
    tree = build_tree(parsed, title="two")
    chunks = chunk_tree(
        tree,
        document_id="d",
        kb_name="kb",
        options=ChunkingOptions(chunk_size=512, chunk_overlap=0),
        count_tokens=lambda text: len(text.split()),
    )
    valves = next(c for c in chunks if c.path.endswith("Valves") and c.type == "text")
    assert valves.page_nums == (1, 2)
    assert [b["page"] for b in valves.metadata["boxes"]] == [1, 2]
    summary = next(c for c in chunks if c.type == "section_summary")
    # The root summary quotes the two headings (pages 1 and 3), not the page-2 text between.
    assert [b["page"] for b in summary.metadata["boxes"]] == [1, 3]
    assert summary.metadata["section_pages"] == [1, 2, 3]
    for chunk in chunks:
        assert {b["page"] for b in chunk.metadata["boxes"]} == set(chunk.page_nums)


def test_outline_headings_still_win_and_their_line_is_not_repeated() -> None:
    pages = [("Safety", "All staff wear boots."), ("Costs", "Boots cost money.")]
    data = scans.text_pdf(pages, outline=True)
    parsed = _parse(data)
    assert [(s.heading, s.level) for s in parsed.sections if s.heading] == [
        ("Safety", 1),
        ("Costs", 1),
    ]
    assert [s.content for s in parsed.sections if s.content] == [
        "All staff wear boots.",
        "Boots cost money.",
    ]


def test_a_pdf_pdfium_cannot_open_is_reread_by_pypdf() -> None:
    good = scans.text_pdf([("Repairable", "The catalog reference is broken.")])
    broken = re.sub(rb"/Root \d+ 0 R", b"/Root 99 0 R", good)
    import pypdfium2 as pdfium

    with pytest.raises(pdfium.PdfiumError):
        pdfium.PdfDocument(broken)
    parsed = _parse(broken)
    assert parsed.metadata["repaired"] is True
    assert "catalog reference is broken" in parsed.text


def test_encrypted_and_hopeless_pdfs_are_still_refused() -> None:
    with pytest.raises(InvalidInputError, match="encrypted"):
        _parse(docs.encrypted_pdf_bytes())
    with pytest.raises(InvalidInputError, match=r"corrupt or unreadable.*second reader"):
        _parse(docs.pdf_bytes()[:400])
    # A page tree whose only kid is itself: "plugin 'core' failed in hook PARSE_DOCUMENT:
    # Failed to load page." read as Eagle-RAG's failure, not the file's.
    with pytest.raises(InvalidInputError, match="the PDF is corrupt: page 1 cannot be read"):
        _parse(_pdf_of([
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        ]))  # fmt: skip


def _pdf_of(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1) with a correct cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % at for at in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_text_layer_boxes_land_where_the_rendered_page_shows_the_ink(rotation: int) -> None:
    import io

    import numpy as np
    from pypdf import PdfReader, PdfWriter

    source = scans.text_pdf([("Ink Check", "Boxes must match the pixels on every rotation.")])
    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(source)).pages:
        writer.add_page(page.rotate(rotation) if rotation else page)
    out = io.BytesIO()
    writer.write(out)
    data = out.getvalue()
    parsed = _parse(data)
    boxes = [b.bbox for s in parsed.sections for b in s.boxes]
    ours = (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
    [image] = scans.render(data, dpi=72)
    ink = np.argwhere(np.asarray(image.convert("L")) < 128)
    width, height = image.size
    seen = (
        ink[:, 1].min() / width,
        ink[:, 0].min() / height,
        ink[:, 1].max() / width,
        ink[:, 0].max() / height,
    )
    assert all(abs(a - b) < 0.04 for a, b in zip(ours, seen, strict=True)), (ours, seen)


def _turned(data: bytes, rotations: dict[int, int]) -> bytes:
    """The PDF with /Rotate set on the pages in ``rotations`` (page index: degrees)."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for index, page in enumerate(PdfReader(io.BytesIO(data)).pages):
        writer.add_page(page.rotate(rotations[index]) if rotations.get(index) else page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_a_turned_page_is_read_top_line_first_with_its_heading(rotation: int) -> None:
    body = "Drip lines in the orchard cut water use by a third. Growers logged it weekly. "
    source = scans.text_pdf(
        [
            ("Lighthouse Maintenance", "The lens was cleaned every month. " * 3),
            ("Orchard", body * 2),
        ]
    )
    parsed = _parse(_turned(source, {0: rotation, 1: rotation}))
    turned = [(s.heading, " ".join(s.content.split())) for s in parsed.sections if s.page == 2]
    # The heading, then one paragraph: not a paragraph (or a heading) per line of the page.
    assert [heading for heading, _ in turned] == ["Orchard", None], turned
    assert turned[1][1] == " ".join((body * 2).split())


@pytest.mark.parametrize("rotation", [90, 270])
def test_a_line_repeated_mid_page_on_turned_pages_is_no_running_head(rotation: int) -> None:
    """Shown turned, every line of a page touches the head band: a note repeated under each
    page's table was dropped as a running head."""
    from fpdf import FPDF

    pdf = FPDF(format=(148, 210))
    for number in (1, 2):
        pdf.add_page()
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, f"Reservoir {number} fell through the dry summer. " * 3)
        pdf.ln(20)
        pdf.multi_cell(0, 6, "Source: city water board survey", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(20)
        pdf.multi_cell(0, 6, "It recovered in November. " * 3)
    parsed = _parse(_turned(bytes(pdf.output()), {0: rotation, 1: rotation}))
    text = " ".join(s.content for s in parsed.sections)
    assert text.count("Source: city water board survey") == 2, text


def test_text_set_sideways_on_a_page_turned_to_show_it_upright_reads_in_order() -> None:
    """A landscape table page: its lines drawn turned a quarter, /Rotate turning them back."""
    import pypdfium2 as pdfium
    from fpdf import FPDF

    from eagle_rag.ingest.parsers.pdf_text import read_text_layer

    pdf = FPDF(unit="pt", format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "", 12)
    with pdf.rotation(90, 300, 420):
        for number in range(5):
            pdf.set_xy(50, 200 + 20 * number)
            pdf.cell(0, 20, f"line {number} of the landscape page")
    # Shown upright the lines run down the page; shown as drawn, left to right across it.
    for rotation, across in [(90, 1), (0, 0)]:
        page = pdfium.PdfDocument(_turned(bytes(pdf.output()), {0: rotation}))[0]
        lines = read_text_layer(page).lines
        assert [line.text[:6] for line in lines] == [f"line {n}" for n in range(5)]
        starts = [line.bbox[across] for line in lines]
        assert starts == sorted(set(starts)), starts


def _report_with_running_heads() -> bytes:
    """Three pages, each with the same running head and a "Page n of 3" foot; one heading."""
    from fpdf import FPDF

    class Report(FPDF):
        def header(self) -> None:
            self.set_font("helvetica", "B", 13)
            self.cell(0, 8, "ACME Corporation Annual Report", new_x="LMARGIN", new_y="NEXT")

        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("helvetica", "", 9)
            self.cell(0, 8, f"Page {self.page_no()} of 3", align="C")

    pdf = Report()
    for number in (1, 2, 3):
        pdf.add_page()
        if number == 2:
            pdf.set_font("helvetica", "B", 20)
            pdf.multi_cell(0, 10, "Results of the Year", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, f"Body text of page {number} about the harvest. " * 12)
    return bytes(pdf.output())


def test_running_heads_and_page_numbers_of_a_text_pdf_are_dropped() -> None:
    parsed = _parse(_report_with_running_heads())
    text = " ".join(s.heading or s.content for s in parsed.sections)
    assert "ACME Corporation" not in text and "Page 2 of 3" not in text
    # The bold running head is not taken for a heading either: only the real one is.
    assert [s.heading for s in parsed.sections if s.heading] == ["Results of the Year"]
    assert [s.page for s in parsed.sections if "Body text of page" in s.content] == [1, 2, 3]


def test_a_top_line_that_does_not_repeat_is_kept() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_y(5)
    pdf.set_font("helvetica", "", 11)
    pdf.cell(0, 6, "Memo to the board, 3 March", new_x="LMARGIN", new_y="NEXT")
    pdf.set_y(40)
    pdf.multi_cell(0, 6, "The board approved the budget for the coming year. " * 5)
    parsed = _parse(bytes(pdf.output()))
    assert "Memo to the board" in " ".join(s.content for s in parsed.sections)


def test_pages_that_carry_only_the_same_few_top_lines_keep_them() -> None:
    """A notice printed twice: both pages hold the same two lines, set in the top band. All
    of them were taken for running heads and the PDF failed as having no text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.set_font("helvetica", size=12)
    for _ in range(2):
        pdf.add_page()
        pdf.multi_cell(
            0,
            8,
            "Safety notice. Fault code E-30 means overheating of the unit. The inverter must be "
            "wired with copper cables of 6 mm2 cross section.",
        )
        pdf.set_y(-15)
        pdf.cell(0, 6, str(pdf.page_no()), align="C")
    parsed = _parse(bytes(pdf.output()))
    assert [s.page for s in parsed.sections if "Fault code E-30" in s.content] == [1, 2]
    assert not any(re.fullmatch(r"\s*[12]\s*", s.content) for s in parsed.sections)


def test_a_blank_page_keeps_dropping_the_running_head() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    for number in (1, 2, 3):
        pdf.add_page()
        pdf.set_font("helvetica", "", 9)
        pdf.set_y(8)
        pdf.cell(0, 5, "ACME Service Manual", new_x="LMARGIN", new_y="NEXT")
        if number != 2:  # page 2 is left blank but for its running head
            pdf.set_y(60)
            pdf.set_font("helvetica", "", 11)
            pdf.multi_cell(0, 6, f"Body text of page {number} about the pump. " * 6)
    parsed = _parse(bytes(pdf.output()))
    assert "ACME Service Manual" not in " ".join(s.heading or s.content for s in parsed.sections)


def test_the_part_of_a_paragraph_on_the_next_page_names_only_that_page() -> None:
    long_body = "Every valve is checked before the pump starts. " * 30  # well onto page 2
    parsed = _parse(scans.text_pdf([("Valves", long_body), ("Pumps", "Pumps are fine.")]))
    tree = build_tree(parsed, title="two")
    chunks = chunk_tree(
        tree,
        document_id="d",
        kb_name="kb",
        options=ChunkingOptions(chunk_size=16, chunk_overlap=0),
        count_tokens=lambda text: len(text.split()),
    )
    valves = [c for c in chunks if c.path.endswith("Valves") and c.type == "text"]
    assert len(valves) > 3
    # The paragraph starts on page 1, but its last chunk's lines are all on page 2.
    assert valves[0].page_nums == (1,) and valves[-1].page_nums == (2,)
    for chunk in valves:
        assert {b["page"] for b in chunk.metadata["boxes"]} == set(chunk.page_nums)


def test_characters_outside_the_bmp_do_not_fail_the_document() -> None:
    # PDFium gives each half of 𠀋 (U+2000B) an index of its own; a lone surrogate in the text
    # cannot be encoded as UTF-8 and used to fail the whole document at the first write.
    import noto_cjk_sans_jp_regular as font
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("cjk", fname=str(font.FONT_PATH))
    pdf.set_font("cjk", size=12)
    pdf.multi_cell(0, 8, "𠀋 𩸽 の寿司を叱る。This manual covers the display. " * 3)
    parsed = _parse(bytes(pdf.output()))
    text = " ".join(s.content for s in parsed.sections)
    text.encode("utf-8")  # no surrogates left
    assert "叱る" in text and "This manual covers the display." in text
    tree = build_tree(parsed, title="manual")
    chunks = chunk_tree(
        tree,
        document_id="d",
        kb_name="kb",
        options=ChunkingOptions(chunk_size=64, chunk_overlap=0),
        count_tokens=lambda t: len(t.split()),
    )
    for chunk in chunks:
        chunk.text.encode("utf-8")


def test_a_numbered_heading_in_the_foot_band_of_two_pages_is_kept() -> None:
    """Two chapters laid out alike put "1.2 Water use" and "2.2 Water use" at the foot of a page
    each: taken for a running foot (numbers aside, the same text), both headings were dropped
    and their sections' text filed under the section before."""
    from fpdf import FPDF

    class Report(FPDF):
        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("helvetica", "", 9)
            self.cell(0, 8, f"Northwind | Page {self.page_no()} of 4", align="C")

    pdf = Report()
    for chapter in (1, 2):
        pdf.add_page()
        pdf.set_font("helvetica", "B", 16)
        pdf.multi_cell(0, 10, f"{chapter} Plant {chapter}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, f"Safety text of plant {chapter}. " * 150)
        pdf.set_y(-31)  # the heading is the page's last line, just above the foot
        pdf.set_font("helvetica", "B", 13)
        pdf.multi_cell(0, 8, f"{chapter}.2 Water use", new_x="LMARGIN", new_y="NEXT")
        pdf.add_page()
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, f"Water text of plant {chapter}. " * 20)
    parsed = _parse(bytes(pdf.output()))
    headings = [s.heading for s in parsed.sections if s.heading]
    assert headings == ["1 Plant 1", "1.2 Water use", "2 Plant 2", "2.2 Water use"]
    text = " ".join(s.content for s in parsed.sections)
    assert "Northwind" not in text and "Page 3 of 4" not in text


def test_chapter_headings_numbered_like_their_pages_are_kept() -> None:
    """ "Chapter 1", "Chapter 2", "Chapter 3" opening pages 1-3 changed only where the page
    number did, so they were dropped as a running head and every chunk lost its chapter."""
    from fpdf import FPDF

    pdf = FPDF()
    for chapter in (1, 2, 3):
        pdf.add_page()
        pdf.set_font("helvetica", "B", 16)
        pdf.multi_cell(0, 10, f"Chapter {chapter}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, f"{_WORK[chapter - 1]} " * 12)
    parsed = _parse(bytes(pdf.output()))
    assert [s.heading for s in parsed.sections if s.heading] == [
        "Chapter 1",
        "Chapter 2",
        "Chapter 3",
    ]


_WORK = ("The pumps are drained.", "The seals are replaced.", "The motors are tested.")


def _reservoir_report(borders: str) -> Any:
    """An fpdf2 page: a numbered heading, a paragraph and a table of reservoir levels whose
    header row fpdf2 sets in bold, as most table tools do (``borders``: ``ALL`` ruled, ``NONE``
    laid out in columns only). The caller adds what follows the table."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "2 Reservoir Levels", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, "Levels fell through the dry summer and recovered. " * 4)
    pdf.ln(4)
    if borders == "ALL":
        pdf.multi_cell(0, 6, "Table 4: Reservoir levels in percent", new_x="LMARGIN", new_y="NEXT")
    rows = [
        ("Reservoir", "June", "August"),
        ("Kestrel Lake", "81", "64"),
        ("Heron Dam", "72", "55"),
    ]
    with pdf.table(borders_layout=borders) as table:
        for row in rows:
            cells = table.row()
            for value in row:
                cells.cell(value)
    return pdf


def _report_with_ruled_table() -> bytes:
    """The reservoir report with a caption and a ruled table."""
    pdf = _reservoir_report("ALL")
    pdf.multi_cell(0, 6, "The lake recovered first. " * 3)
    return bytes(pdf.output())


def test_the_bold_header_row_of_a_ruled_table_is_no_heading() -> None:
    parsed = _parse(_report_with_ruled_table())
    headings = [s.heading for s in parsed.sections if s.heading]
    assert headings == ["2 Reservoir Levels"]
    text = " ".join(" ".join(s.content.split()) for s in parsed.sections)
    assert "Reservoir June August" in text


def test_the_bold_header_row_of_a_table_without_rules_is_no_heading() -> None:
    """A table laid out in columns with no lines: its bold header row's cells stand far apart,
    where a heading's words sit a space apart."""
    pdf = _reservoir_report("NONE")
    pdf.ln(4)
    pdf.set_font("helvetica", "B", 11)
    pdf.multi_cell(0, 6, "Storage Outlook", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, "The lake recovered first. " * 3)
    parsed = _parse(bytes(pdf.output()))
    assert [s.heading for s in parsed.sections if s.heading] == [
        "2 Reservoir Levels",
        "Storage Outlook",
    ]


# An Arabic line with numbers and a Latin name inside: (word, whether it reads left to right).
_ARABIC_WORDS = [
    ("اكتشف", False),
    ("العلماء", False),
    ("3.5", True),
    ("في", False),
    ("جامعة", False),
    ("Cairo University", True),
    ("دواء.", False),
]


def _arabic_line_pdf(layout: str) -> bytes:
    """The line laid out right to left, written in ``visual`` order (one run, left to right, as
    shaping engines emit it) or glyph by glyph in ``reading`` order; or, ``unidirectional``, laid
    out left to right in reading order by a generator without bidi support (fpdf2 without text
    shaping)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("dejavu", fname="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    pdf.set_font("dejavu", size=14)
    if layout == "unidirectional":
        pdf.multi_cell(0, 8, " ".join(word for word, _ in _ARABIC_WORDS))
        return bytes(pdf.output())
    words, logical = [], 0
    for word, left_to_right in _ARABIC_WORDS:
        chars = list(enumerate(word, logical))
        words.append(chars if left_to_right else chars[::-1])
        logical += len(word) + 1
    placed, x = [], 20.0
    for word in reversed(words):
        for index, char in [*word, (max(i for i, _ in word) + 1, " ")]:
            placed.append((index, x, char))
            x += pdf.get_string_width(char)
    if layout == "visual":  # one run, as shaping engines emit it
        pdf.text(20, 30, "".join(char for _, _, char in placed))
    else:
        for _, x, char in sorted(placed):
            pdf.text(x, 30, char)
    return bytes(pdf.output())


@pytest.mark.parametrize("layout", ["visual", "reading", "unidirectional"])
def test_a_right_to_left_line_is_read_in_reading_order_however_its_glyphs_were_written(
    layout: str,
) -> None:
    """Arabic text was stored mirrored ("يخفض" as "ضفخي"): PDFium's order was kept."""
    import pypdfium2 as pdfium

    from eagle_rag.ingest.parsers.pdf_text import read_text_layer

    page = pdfium.PdfDocument(_arabic_line_pdf(layout))[0]
    lines = read_text_layer(page).lines
    assert [line.text for line in lines] == [" ".join(word for word, _ in _ARABIC_WORDS)]
    assert lines[0].bbox[2] - lines[0].bbox[0] > 0.3  # the box still spans the line


def test_a_left_to_right_line_turns_only_its_right_to_left_words() -> None:
    from eagle_rag.ingest.parsers.pdf_bidi import reading_order

    laid_out = "The word ملاعلا means 3 things"  # "العالم" as drawn, right to left
    assert reading_order(laid_out, range(len(laid_out))) == "The word العالم means 3 things"


@pytest.mark.parametrize(
    "laid_out",
    [
        "2024 םלוע םולש",  # drawn right to left: the number stays left to right
        "שלום עולם 2024",  # drawn left to right by a generator without bidi support
    ],
)
def test_a_hebrew_line_is_read_right_to_left_unless_its_words_show_it_was_drawn_mirrored(
    laid_out: str,
) -> None:
    """Hebrew's final letters (ם) only end words: at a word's start they show a mirrored line."""
    from eagle_rag.ingest.parsers.pdf_bidi import reading_order

    assert reading_order(laid_out, range(len(laid_out))) == "שלום עולם 2024"
