"""Figure and table regions, and the reading order around them, on generated report scans read
by the real OCR and layout models (tests/ingest/report_scans.py): which region gets a caption,
which regions are empty paper or a paragraph, and which lines make a paragraph or a title."""

from __future__ import annotations

import pytest
from PIL import Image

from eagle_rag.ingest.pixelrag.engine import OcrEngine, Region
from eagle_rag.ingest.pixelrag.reading import page_blocks, to_sections
from eagle_rag.ingest.pixelrag.visuals_regions import (
    RegionVisual,
    ink_share,
    ocr_region_visuals,
    region_visuals,
)
from tests.ingest import report_scans as rs
from tests.ingest.scans import squash


def _visuals(ocr: OcrEngine, image: Image.Image, *, judge_ink: bool = True) -> list[RegionVisual]:
    page = ocr.read(image)
    picture = image if judge_ink else None
    return ocr_region_visuals(page, 1, min_side=0.08, max_regions=8, picture=picture)


def test_one_caption_goes_to_one_region_the_figure_above_it(ocr: OcrEngine) -> None:
    """The model found the chart and a figure over the empty paper below its caption: both
    were captioned "Figure 3: ...", and the empty one was sent with answers as the figure."""
    found = _visuals(ocr, rs.chart_page(), judge_ink=False)
    captioned = [v for v in found if v.caption]
    assert len(found) == 2 and len(captioned) == 1
    [chart] = captioned
    assert chart.caption == rs.FIGURE_CAPTION and chart.bbox[3] < 0.57
    assert "Q3" in chart.text  # the chart's labels, not the empty paper's nothing


def test_a_caption_inside_the_table_region_is_its_caption(ocr: OcrEngine) -> None:
    """The model drew the table's region over the caption printed above it, and found no
    caption region: the table was stored without "Table 2 ..."."""
    [table] = _visuals(ocr, rs.set_table_page())
    assert table.kind == "table" and table.caption == rs.TABLE_CAPTION


def test_a_region_over_empty_speckled_paper_is_no_figure(ocr: OcrEngine) -> None:
    """Speckles on the empty lower half of a page made the model see a figure there (its only
    text the page number): it was stored and summarised as an image."""
    assert [v.kind for v in _visuals(ocr, rs.table_page())] == ["table"]
    assert [v.kind for v in _visuals(ocr, rs.table_page(specks=False))] == ["table"]
    [chart] = _visuals(ocr, rs.chart_page())  # ink enough: the chart stays
    assert chart.caption == rs.FIGURE_CAPTION


@pytest.mark.parametrize("seed", [1, 2])  # the text region the surer; the figure the surer
def test_a_paragraph_labelled_text_and_figure_is_no_figure(ocr: OcrEngine, seed: int) -> None:
    """The model labelled the page's first paragraph text and figure: the paragraph was
    stored and sent with answers as a picture."""
    face = rs.sans_face()
    if face is None:
        pytest.skip("no DejaVu Sans beside OpenCV")
    [chart] = _visuals(ocr, rs.sans_chart_page(seed, face))
    assert chart.caption == rs.FIGURE_CAPTION and chart.bbox[1] > 0.2


def test_ink_is_told_from_speckles_and_paper_tone() -> None:
    blank = rs.speckled(Image.new("L", rs.SIZE, 255), 7)
    ink = ink_share(blank)
    assert ink((0.0, 0.0, 1.0, 1.0)) < 0.001
    toned = Image.new("RGB", (400, 400), (226, 220, 200))  # yellowed paper, a thin rule drawn
    toned.paste((40, 40, 40), (50, 200, 350, 202))
    share = ink_share(toned)
    assert share((0.0, 0.0, 1.0, 0.4)) < 0.001  # the paper's tone is no ink
    assert share((0.1, 0.45, 0.9, 0.55)) > 0.05  # a hairline is


BULLETIN = ((2, "2 Glacier Survey", rs.GLACIER), (3, "3 Cable Repairs", rs.CABLE))


def test_a_running_head_set_above_the_title_is_dropped_not_glued_to_it(ocr: OcrEngine) -> None:
    """Unclaimed by any region, the head joined the title 0.02 of the page below it: "Northern
    Valley Agriculture Bulletin 3 Cable Repairs" became the section's heading, and a block
    reaching below the margin band was never tested as a running head."""
    pages = [(n, page_blocks(ocr.read(rs.bulletin_page(n, t, text)), n)) for n, t, text in BULLETIN]
    sections = to_sections(pages)
    assert [s.heading for s in sections if s.heading] == ["2 Glacier Survey", "3 Cable Repairs"]
    assert not any("bulletin" in squash(s.heading or s.content) for s in sections)


def test_a_running_head_in_one_region_with_the_title_is_dropped(ocr: OcrEngine) -> None:
    """Speckled otherwise, page 3 had the head and its title in one figure region: they were
    one block, as the stray lines were."""
    pages = [
        (n, page_blocks(ocr.read(rs.bulletin_page(n, t, text, seed=12 if n == 3 else None)), n))
        for n, t, text in BULLETIN
    ]
    texts = [squash(s.heading or s.content) for s in to_sections(pages) if s.page == 3]
    assert texts[0] == squash("3 Cable Repairs")
    assert not any("bulletin" in text for text in texts)


def test_a_surer_figure_region_over_a_paragraph_does_not_split_it(ocr: OcrEngine) -> None:
    """The model saw page 3's first paragraph as text (0.77) and drew a figure (0.88) from its
    second line to the page's foot: the figure took the lines its box held, and the paragraph
    was cut after "three vessels and a remotely"."""
    page = ocr.read(rs.bulletin_page(3, "3 Cable Repairs", rs.CABLE))
    texts = [squash(b.text) for b in page_blocks(page, 3) if b.kind == "text"]
    first = next(text for text in texts if text.startswith("submarinecable"))
    assert first.endswith("wasrestored.")


def test_a_caption_found_as_a_region_and_as_a_line_goes_to_one_region_only() -> None:
    """The chart found "Figure 3: ..." as a caption region, the table below it as a line in its
    band: the two claims were told apart by how they were found, and both regions got it."""
    caption = "Figure 3: Quarterly pumpkin yield"
    caption_box = (0.1, 0.42, 0.9, 0.45)
    regions = [
        Region("figure", (0.1, 0.10, 0.9, 0.40), 0.9),
        Region("figure_caption", caption_box, 0.8),
        Region("table", (0.1, 0.49, 0.9, 0.70), 0.7),
    ]

    def text_in(box: tuple[float, float, float, float]) -> str:
        middle = (caption_box[1] + caption_box[3]) / 2
        return caption if box[1] <= middle <= box[3] and box[0] <= 0.5 <= box[2] else ""

    found = region_visuals(regions, text_in, 1, min_side=0.05, max_regions=5)
    assert [(v.kind, v.caption) for v in found] == [("image", caption), ("table", "")]
