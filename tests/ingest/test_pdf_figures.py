"""Figures of text-born PDFs where papers and reports put them: a figure placed as a Form
XObject (how LaTeX's \\includegraphics and most "insert PDF" tools embed a chart) is cut from
where it is printed and keeps its caption; an unlabelled chart is captioned by the title
printed above it, not by the page's running head."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest
from PIL import Image

from eagle_rag.ingest.pixelrag.visuals_pdf import PdfVisualOptions, pdf_visuals
from tests.ingest import visual_docs as vd

# Where the figure page is placed on the report page, in PDF points (A4: 595 x 842, origin
# bottom-left): 60 pt from the left, its bottom 430 pt above the page's bottom.
PLACED_AT = (60.0, 430.0)
FIGURE_SIZE = (300.0, 190.0)  # the figure page, points


def _figure_page() -> bytes:
    """A one-page PDF that is just the chart picture, as a plotting tool exports a figure."""
    from fpdf import FPDF

    width_mm, height_mm = (v * 25.4 / 72 for v in FIGURE_SIZE)
    pdf = FPDF(unit="mm", format=(width_mm, height_mm))
    pdf.add_page()
    pdf.image(io.BytesIO(vd.chart_png()), x=0, y=0, w=width_mm, h=height_mm)
    return bytes(pdf.output())


def _report_with_placed_figure() -> bytes:
    """A text page with a gap for the figure and its caption under it; the figure page is then
    placed in the gap as a Form XObject."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "Wind Farm Report", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, vd.INTRO, new_x="LMARGIN", new_y="NEXT")
    # The caption just under the figure: its bottom edge is 430 pt up, i.e. ~145 mm down.
    pdf.set_xy(20, 297 - PLACED_AT[1] * 25.4 / 72 + 2)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, vd.FIGURE_CAPTION, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, vd.OUTRO, new_x="LMARGIN", new_y="NEXT")
    report = pdfium.PdfDocument(bytes(pdf.output()))
    figure = pdfium.PdfDocument(_figure_page())
    try:
        placed = figure.page_as_xobject(0, report)
        form = placed.as_pageobject()
        form.transform(pdfium.PdfMatrix().translate(*PLACED_AT))
        page = report[0]
        page.insert_obj(form)
        page.gen_content()
        out = io.BytesIO()
        report.save(out)
        return out.getvalue()
    finally:
        figure.close()
        report.close()


def test_a_figure_inside_a_form_is_boxed_on_the_page_with_its_caption() -> None:
    data = _report_with_placed_figure()
    document = pdfium.PdfDocument(data)
    try:  # the premise: the picture is nested in a form, not on the page itself
        images = document[0].get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3)
        nested = [item.level for item in images]
    finally:
        document.close()
    assert nested == [1]

    [figure] = pdf_visuals(data, frozenset(), PdfVisualOptions())
    assert figure.kind == "image" and figure.page == 1
    width, height = 595.28, 841.89
    expected = (
        PLACED_AT[0] / width,
        1 - (PLACED_AT[1] + FIGURE_SIZE[1]) / height,
        (PLACED_AT[0] + FIGURE_SIZE[0]) / width,
        1 - PLACED_AT[1] / height,
    )
    assert all(abs(a - b) < 0.01 for a, b in zip(figure.bbox, expected, strict=True))
    assert figure.caption == vd.FIGURE_CAPTION
    crop = Image.open(io.BytesIO(figure.image)).convert("RGB")
    # The crop is the chart (blue bars), not the text around where the form's own
    # coordinates would put it.
    blue = sum(1 for r, g, b in crop.get_flattened_data() if b > 150 and r < 80)
    assert blue > 0.1 * crop.width * crop.height


CHART_TITLE = "Blade failures per year by coating"
RUNNING_HEAD = "Lake Vireo Wind Farm - Annual Report"


def _titled_charts_pdf() -> bytes:
    """Two vector bar charts without a "Figure n" caption: one titled just above it, one set
    right under the page's running head with no title of its own."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "", 9)
    pdf.text(20, 12, RUNNING_HEAD)
    _bars(pdf, top=30)  # just under the running head: its top is ~10% down the page
    pdf.set_font("helvetica", "B", 12)
    pdf.text(30, 130, CHART_TITLE)
    _bars(pdf, top=140)
    return bytes(pdf.output())


def _bars(pdf: Any, top: float) -> None:
    """A vector bar chart 60 mm high, its top ``top`` mm down the page: axes, bars, ticks."""
    pdf.line(30, top + 60, 180, top + 60)
    pdf.line(30, top, 30, top + 60)
    for i, value in enumerate((55, 45, 38, 30, 22, 15, 10)):
        pdf.set_fill_color(200, 60, 40)
        pdf.rect(38 + i * 20, top + 60 - value, 12, value, style="F")
    for tick in range(5):
        pdf.line(27, top + 60 - tick * 12, 30, top + 60 - tick * 12)


def test_an_unlabelled_chart_is_captioned_by_its_title_not_the_running_head() -> None:
    charts = pdf_visuals(_titled_charts_pdf(), frozenset(), PdfVisualOptions())
    assert [v.kind for v in charts] == ["image", "image"]
    under_head, titled = charts
    assert titled.caption == CHART_TITLE
    assert RUNNING_HEAD not in under_head.caption and "Vireo" not in under_head.caption


def test_a_chart_under_a_paragraph_is_not_captioned_by_its_last_sentence() -> None:
    """The nearest lines above an unlabelled chart were its "title" even when they ended a
    paragraph: a table under body text was captioned "Results paragraph on page two."."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "", 11)
    pdf.set_xy(30, 120)
    pdf.multi_cell(150, 6, "The results were checked by the auditors in May.")
    _bars(pdf, top=140)
    [chart] = pdf_visuals(bytes(pdf.output()), frozenset(), PdfVisualOptions())
    assert chart.caption == ""


def test_a_caption_is_a_label_with_its_number() -> None:
    from eagle_rag.ingest.pixelrag.visuals_found import CAPTION

    for line in ("Figure 3: Output", "Fig. 2", "Table IV: Costs", "Figure S2", "图 1 产量", "表2"):
        assert CAPTION.match(line), line
    for line in ("Table of Contents", "Tables show the costs", "Figures are in thousands"):
        assert not CAPTION.match(line), line


def test_a_spent_table_budget_leaves_the_remaining_pages_without_tables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The table finder's CPU budget is per document (CpuBudget, tested with the layout pass):
    once spent, later grid pages keep their text and give no table."""
    from eagle_rag.ingest.pixelrag import visuals_pdf

    data = vd.report_pdf()  # page 2 holds the ruled table
    assert "table" in [v.kind for v in pdf_visuals(data, frozenset(), PdfVisualOptions())]
    monkeypatch.setattr(visuals_pdf, "TABLE_BUDGET_S", -1.0)
    assert "table" not in [v.kind for v in pdf_visuals(data, frozenset(), PdfVisualOptions())]


def _shown_turned(data: bytes, rotation: int) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(data)).pages:
        writer.add_page(page.rotate(rotation))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _turned_box(box: tuple[float, ...], rotation: int) -> tuple[float, ...]:
    """Where a box of the upright page lies on the page shown turned ``rotation`` clockwise."""
    x0, y0, x1, y1 = box
    return {
        90: (1 - y1, x0, 1 - y0, x1),
        180: (1 - x1, 1 - y1, 1 - x0, 1 - y0),
        270: (y0, 1 - x1, y1, 1 - x0),
    }[rotation]


@pytest.mark.parametrize("rotation", [90, 180, 270])
@pytest.mark.parametrize("make", [vd.figure_and_table_pdf, vd.vector_chart_pdf])
def test_figures_and_tables_of_a_turned_page_are_where_it_shows_them_and_stored_upright(
    rotation: int, make: Any
) -> None:
    """A page with /Rotate: each visual's box is on the page as shown (where the preview draws
    it), its picture stands upright, and its caption, text and cells are those of the page
    read upright."""
    data = make()
    upright = pdf_visuals(data, frozenset(), PdfVisualOptions())
    turned = pdf_visuals(_shown_turned(data, rotation), frozenset(), PdfVisualOptions())
    assert {v.kind for v in upright} == (
        {"image", "table"} if make is vd.figure_and_table_pdf else {"image"}
    )
    assert sorted((v.kind, v.caption, v.text) for v in turned) == sorted(
        (v.kind, v.caption, v.text) for v in upright
    )
    for visual in upright:
        [same] = [v for v in turned if (v.kind, v.caption) == (visual.kind, visual.caption)]
        expected = _turned_box(visual.bbox, rotation)
        assert all(abs(a - b) < 0.01 for a, b in zip(same.bbox, expected, strict=True)), (
            same.bbox,
            expected,
        )
        assert abs(same.width - visual.width) <= 3 and abs(same.height - visual.height) <= 3
        mine, theirs = (
            np.asarray(Image.open(io.BytesIO(v.image)).convert("L").resize((64, 64)), dtype=float)
            for v in (same, visual)
        )
        assert np.abs(mine - theirs).mean() < 12  # the same picture, the same way up


def _drawn_sideways(data: bytes) -> bytes:
    """The A4 page drawn turned a quarter counter-clockwise on a landscape page whose /Rotate
    turns it back (how landscape pages are often made): shown, it is the page it was."""
    from pypdf import PdfReader, PdfWriter, Transformation
    from pypdf.generic import RectangleObject

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    page = writer.pages[0]
    width, height = float(page.mediabox.width), float(page.mediabox.height)
    page.add_transformation(Transformation().rotate(90).translate(height, 0))
    page.mediabox = RectangleObject((0, 0, height, width))
    page.rotate(90)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_landscape_page_drawn_sideways_keeps_its_table_rows_and_separate_captions() -> None:
    data = vd.figure_and_table_pdf()
    upright = pdf_visuals(data, frozenset(), PdfVisualOptions())
    shown = pdf_visuals(_drawn_sideways(data), frozenset(), PdfVisualOptions())
    assert [(v.kind, v.caption, v.text) for v in shown] == [
        (v.kind, v.caption, v.text) for v in upright
    ]
    for mine, theirs in zip(shown, upright, strict=True):
        assert all(abs(a - b) < 0.01 for a, b in zip(mine.bbox, theirs.bbox, strict=True))
        assert abs(mine.width - theirs.width) <= 3 and abs(mine.height - theirs.height) <= 3
