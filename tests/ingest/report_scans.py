"""Scanned report pages for the layout tests: a title, paragraphs, a bar chart or a ruled table
with its caption, a page number, drawn with Pillow's own font and speckled as a scanner leaves
them. The layout model reads these pages as it read the tester's scans that exposed each case
(a region over empty paper, one caption near two regions, a figure over a paragraph)."""

from __future__ import annotations

import random
from functools import cache

from PIL import Image, ImageDraw, ImageFont

SIZE = (1240, 1754)  # A4 at 150 dpi
HARVEST = (
    "Pumpkin harvest yields rose sharply in the northern valley during the autumn season. "
    "Farmers attribute the increase to improved irrigation channels and careful seed selection."
)
GLACIER = (
    "Glacier retreat measurements at the observatory show the ice front moved back forty "
    "meters. The survey team used laser rangefinders and aerial photographs for this work."
)
CABLE = (
    "Submarine cable repairs near the harbor required three vessels and a remotely operated "
    "vehicle. The outage lasted eleven days before the telecom link was restored."
)
FIGURE_CAPTION = "Figure 3: Quarterly pumpkin yield by quarter"
TABLE_CAPTION = "Table 2 Ocean station temperatures"
RUNNING_HEAD = "Northern Valley Agriculture Bulletin"
TABLE = (("Station", "Depth", "Temp"), ("Alpha", "120 m", "4.2"), ("Bravo", "340 m", "3.1"))


def _font(size: int, face: str | None = None) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size) if face is None else ImageFont.truetype(face, size)


def sans_face() -> str | None:
    """DejaVu Sans, as OpenCV's wheel bundles it (OCR needs OpenCV); None where it does not."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("cv2")
    origin = spec.origin if spec is not None else None
    path = Path(origin).parent / "qt" / "fonts" / "DejaVuSans.ttf" if origin else None
    return str(path) if path is not None and path.exists() else None


def _wrap(draw: ImageDraw.ImageDraw, text: str, y: int, face: str | None) -> int:
    font, line = _font(26, face), ""
    for word in text.split():
        longer = f"{line} {word}".strip()
        if draw.textlength(longer, font=font) > SIZE[0] - 200:
            draw.text((100, y), line, font=font, fill=0)
            y, line = y + 39, word
        else:
            line = longer
    draw.text((100, y), line, font=font, fill=0)
    return y + 39


def _chart(draw: ImageDraw.ImageDraw, y: int, face: str | None) -> int:
    x0, y0, x1, y1 = 200, y + 20, 1040, y + 470
    draw.rectangle((x0, y0, x1, y1), outline=0, width=3)
    for i, value in enumerate((3, 7, 5, 9, 4, 6)):
        bx = x0 + 60 + i * 125
        draw.rectangle((bx, y1 - 30 - value * 40, bx + 70, y1 - 30), fill=80)
        draw.text((bx, y1 - 28), f"Q{i + 1}", font=_font(20, face), fill=0)
    draw.text((x0 + 20, y0 + 10), "Yield (tonnes)", font=_font(22, face), fill=0)
    draw.text((200, y1 + 15), FIGURE_CAPTION, font=_font(24, face), fill=0)
    return y1 + 85


def _table(draw: ImageDraw.ImageDraw, y: int) -> int:
    draw.text((200, y), TABLE_CAPTION, font=_font(24), fill=0)
    y += 50
    for r, row in enumerate((*TABLE, ("Charlie", "510 m", "2.7"))):
        for c, cell in enumerate(row):
            box = (200 + c * 280, y + r * 55, 200 + (c + 1) * 280, y + (r + 1) * 55)
            draw.rectangle(box, outline=0, width=2)
            draw.text((box[0] + 15, box[1] + 12), cell, font=_font(24), fill=0)
    return y + 250


def page(
    title: str,
    paragraphs: tuple[str, ...],
    *,
    chart: bool = False,
    table: bool = False,
    face: str | None = None,
) -> Image.Image:
    """A clean page: a 44 px title at the top, the paragraphs, then the chart or the table;
    set in Pillow's own font, or the TrueType ``face``."""
    image = Image.new("L", SIZE, 255)
    draw = ImageDraw.Draw(image)
    draw.text((100, 120), title, font=_font(44, face), fill=0)
    y = 220
    for paragraph in paragraphs:
        y = _wrap(draw, paragraph, y, face) + 25
    if chart:
        y = _chart(draw, y, face)
    if table:
        y = _table(draw, y)
    return image


def speckled(image: Image.Image, seed: int, skew: float = 0.0) -> Image.Image:
    """The page as a scanner gives it: 4,000 dark specks, turned ``skew`` degrees."""
    out = image.copy()
    pixels, rng = out.load(), random.Random(seed)
    assert pixels is not None
    for _ in range(4000):
        x, y = rng.randrange(out.width), rng.randrange(out.height)
        pixels[x, y] = rng.choice((0, 120))
    if skew:
        out = out.rotate(skew, fillcolor=255, resample=Image.Resampling.BICUBIC)
    return out.convert("RGB")


def numbered(image: Image.Image, number: int, face: str | None = None) -> Image.Image:
    out = image.copy()
    place = (SIZE[0] // 2 - 10, SIZE[1] - 80)
    ImageDraw.Draw(out).text(place, str(number), font=_font(22, face), fill=0)
    return out


@cache
def chart_page() -> Image.Image:
    """Two paragraphs, a bar chart with "Figure 3: ..." under it: the model also finds a
    figure over the empty paper below the caption."""
    clean = page("1 Harvest Report", (HARVEST, HARVEST.replace("Pumpkin", "Squash")), chart=True)
    return speckled(numbered(clean, 1), 1, 0.8)


def sans_chart_page(seed: int, face: str) -> Image.Image:
    """The chart page set in DejaVu Sans, turned 0.8 degrees: the model labels its first
    paragraph both text and figure, either the more confident by the speckles."""
    clean = page(
        "1 Harvest Report",
        (HARVEST, HARVEST.replace("Pumpkin", "Squash")),
        chart=True,
        face=face,
    )
    return speckled(numbered(clean, 1, face), seed, 0.8)


def table_page(*, specks: bool = True) -> Image.Image:
    """A paragraph and a ruled table under its caption: on the speckled page the model finds a
    figure over the empty lower half (only the page number is there)."""
    clean = numbered(page("2 Glacier Survey", (GLACIER,), table=True), 2)
    return speckled(clean, 2, -0.6) if specks else clean.convert("RGB")


def bulletin_page(number: int, title: str, paragraph: str, seed: int | None = None) -> Image.Image:
    """A page of a bulletin: its small running head set close above the page's title, and
    "Page N of 3" at the foot; speckled by ``seed`` (by default the page's index)."""
    image = page(title, (paragraph, paragraph))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, SIZE[0], 110), fill=255)
    draw.text((100, 50), RUNNING_HEAD, font=_font(20), fill=0)
    draw.text((SIZE[0] - 260, SIZE[1] - 70), f"Page {number} of 3", font=_font(20), fill=0)
    return speckled(image, number - 1 if seed is None else seed)


def set_table_page() -> Image.Image:
    """The table page set in Times with fpdf2 and rendered: the model draws the table's region
    over the caption printed above it, and finds no caption region."""
    import numpy as np
    from fpdf import FPDF

    from tests.ingest import scans

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("times", "B", size=22)
    pdf.text(17, 28, "2 Glacier Survey")
    pdf.set_font("times", size=13)
    pdf.set_xy(17, 37)
    pdf.multi_cell(176, 7, GLACIER)
    y = pdf.get_y() + 4
    pdf.set_font("times", size=12)
    pdf.text(34, y + 4, TABLE_CAPTION)
    for r, row in enumerate((*TABLE, ("Charlie", "510 m", "2.7"))):
        for c, cell in enumerate(row):
            pdf.rect(34 + c * 47, y + 8 + r * 9.3, 47, 9.3)
            pdf.text(34 + c * 47 + 3, y + 8 + r * 9.3 + 6.5, cell)
    pdf.set_font("times", size=11)
    pdf.text(103, 285, "2")
    gray = np.asarray(scans.render(bytes(pdf.output()))[0].convert("L")).copy()
    rng = np.random.default_rng(2)
    specks = rng.random(gray.shape) < 0.002
    gray[specks] = rng.choice([0, 120], int(specks.sum())).astype(np.uint8)
    return Image.fromarray(gray).convert("RGB")
