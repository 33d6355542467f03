"""Text-born PDFs with visuals, made with fpdf2: a chart image with a caption, a ruled table."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from PIL import Image, ImageDraw

FIGURE_CAPTION = "Figure 1: Turbine output by region in megawatts"
TABLE_CAPTION = "Table 1: Maintenance intervals per component"
TABLE_ROWS = (
    ("Component", "Interval", "Crew"),
    ("Gearbox", "6 months", "Mechanical"),
    ("Blade bearing", "12 months", "Rotor team"),
    ("Yaw drive", "3 months", "Electrical"),
)
INTRO = (
    "This report covers the wind farm at Lake Vireo. The gearbox and the blade bearings "
    "were inspected, and the output of every region is compared below."
)
OUTRO = "The northern region produced the most power during the storm season."
TABLE_INTRO = "Servicing follows the intervals listed in the table, agreed with the operator."


def chart_png(size: tuple[int, int] = (480, 300)) -> bytes:
    """A bar chart without words (its words are in the caption, as in most papers)."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    width, height = size
    for i, share in enumerate((0.8, 0.5, 0.65, 0.3)):
        left = 40 + i * (width - 80) // 4
        top = int(height * (1 - share))
        draw.rectangle((left, top, left + 60, height - 20), fill=(30, 90, 200))
    draw.line((30, height - 20, width - 20, height - 20), fill="black", width=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def report_pdf() -> bytes:
    """Page 1: heading, paragraph, chart + caption, paragraph. Page 2: heading, ruled table."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "Wind Farm Report", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, INTRO, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.image(io.BytesIO(chart_png()), x=30, w=150)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, FIGURE_CAPTION, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, OUTRO, new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "Maintenance", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, TABLE_INTRO, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, TABLE_CAPTION, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    with pdf.table(first_row_as_headings=True) as table:
        for row in TABLE_ROWS:
            cells = table.row()
            for value in row:
                cells.cell(value)
    return bytes(pdf.output())


SLIDE_TEXT = "Storm season output compared across the regions."
DOC_TEXT = "The chart below shows the storm season output of every region."


def deck_pptx() -> bytes:
    """Slide 1: title only; slide 2: title, text and the chart picture (plus a tiny icon)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Wind Farm Review"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Regional Output"
    second.shapes.add_textbox(
        Inches(1), Inches(1.5), Inches(8), Inches(1)
    ).text_frame.text = SLIDE_TEXT
    second.shapes.add_picture(io.BytesIO(chart_png()), Inches(2), Inches(3), width=Inches(5))
    icon = io.BytesIO()
    Image.new("RGB", (16, 16), "red").save(icon, format="PNG")
    second.shapes.add_picture(io.BytesIO(icon.getvalue()), Inches(9), Inches(0.2))
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def report_docx() -> bytes:
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.add_heading("Output Review", level=1)
    document.add_paragraph("An introduction about the wind farm and its regions.")
    document.add_heading("Storm Season", level=2)
    document.add_paragraph(DOC_TEXT)
    document.add_picture(io.BytesIO(chart_png()), width=Inches(4))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


VECTOR_CAPTION = "Figure 2: Blade failures per year"


def vector_chart_pdf() -> bytes:
    """A chart drawn with lines and rectangles (no image), labelled, with a caption."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 16)
    pdf.multi_cell(0, 10, "Blade Reliability", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, "Failures fell every year after the new coating.", new_x="LMARGIN")
    pdf.line(30, 150, 180, 150)
    pdf.line(30, 60, 30, 150)
    for i, value in enumerate((80, 65, 50, 40, 30, 22, 15)):
        pdf.set_fill_color(200, 60, 40)
        pdf.rect(38 + i * 20, 150 - value, 12, value, style="F")
        pdf.set_font("helvetica", "", 8)
        pdf.text(38 + i * 20, 156, str(2017 + i))
    for tick in range(5):
        pdf.line(27, 150 - tick * 20, 30, 150 - tick * 20)
    pdf.set_xy(10, 162)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, VECTOR_CAPTION, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def figure_and_table_pdf(*, table_intro: bool = True) -> bytes:
    """One text-born A4 page: heading, paragraph, chart + caption, table caption + ruled table
    (scanned by the tests to give a page whose figure and table are only pixels). Without
    ``table_intro`` the table's caption follows the figure's at once."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "Wind Farm Report", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, INTRO, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.image(io.BytesIO(chart_png()), x=40, w=130)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, FIGURE_CAPTION, new_x="LMARGIN", new_y="NEXT")
    if table_intro:
        pdf.ln(6)
        pdf.set_font("helvetica", "", 11)
        pdf.multi_cell(0, 6, TABLE_INTRO, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, TABLE_CAPTION, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    with pdf.table(first_row_as_headings=True) as table:
        for row in TABLE_ROWS:
            cells = table.row()
            for value in row:
                cells.cell(value)
    return bytes(pdf.output())


def scanned_a4(images: list[Image.Image]) -> bytes:
    """An image-only A4 PDF, one JPEG page per image (a scanner's output)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    for image in images:
        pdf.add_page()
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        pdf.image(io.BytesIO(buffer.getvalue()), x=0, y=0, w=210, h=297)
    return bytes(pdf.output())


SCATTER_CAPTION = "Figure 3: Wind speed against power for every turbine"


def scatter_pdf() -> bytes:
    """A text-born page with a scatter plot of 500 dots drawn one path each: too many pieces
    for the vector grouping, so only the layout model sees one chart there."""
    import random

    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 16)
    pdf.multi_cell(0, 10, "Power Curve", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, "Every turbine follows the same curve above cut-in speed.")
    pdf.line(30, 160, 180, 160)
    pdf.line(30, 60, 30, 160)
    rng = random.Random(7)
    pdf.set_fill_color(40, 90, 180)
    for _ in range(500):
        x = rng.uniform(32, 178)
        y = 160 - 95 / (1 + 2.718 ** (-(x - 100) / 15)) + rng.uniform(-4, 4)
        pdf.circle(x, y, 0.8, style="F")
    pdf.set_xy(10, 166)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, SCATTER_CAPTION, new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, "The spread narrows at rated power, where the pitch control holds it.")
    return bytes(pdf.output())


PLACEHOLDER_CAPTION = "Output of the northern region during the storm season."


def placeholder_deck_pptx() -> bytes:
    """One "Picture with Caption" slide whose picture was put into the layout's placeholder
    (what PowerPoint's "insert picture" icon in a placeholder does): a PlaceholderPicture."""
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[8])
    slide.shapes.title.text = "Northern Region"
    picture, body = (slide.placeholders[i] for i in (1, 2))
    picture.insert_picture(io.BytesIO(chart_png()))
    body.text_frame.text = PLACEHOLDER_CAPTION
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def docx_with(picture: bytes, text: str = DOC_TEXT, heading: str = "Output Review") -> bytes:
    """A Word file: a heading, a paragraph, then ``picture`` (encoded image bytes); without
    ``heading`` and ``text``, the picture alone (a scan pasted into Word)."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    if heading:
        document.add_heading(heading, level=1)
    if text:
        document.add_paragraph(text)
    document.add_picture(io.BytesIO(picture), width=Inches(4))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def oversized_png(side: int = 10_000) -> bytes:
    """A white 1-bit PNG of ``side`` squared pixels: a few KB that decode to ``side``² bytes."""
    buffer = io.BytesIO()
    Image.new("1", (side, side), 1).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def screenshot_pdf(picture: bytes) -> bytes:
    """A text-born A4 page: a heading, a paragraph, then ``picture`` (a screenshot of a page:
    its words are only pixels) with a caption."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, "Wind Farm Report", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "", 11)
    pdf.multi_cell(0, 6, INTRO, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.image(io.BytesIO(picture), x=30, w=150)
    pdf.set_font("helvetica", "I", 10)
    pdf.multi_cell(0, 6, "Figure 4: The safety notice", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


async def ingest_completed(app: Any, kb: str, data: bytes, name: str) -> str:
    """Submit ``data`` to the in-process app, wait for the queue, expect it completed; its id."""
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(data)
    )
    await app.queue.join()
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    return str(document.id)
