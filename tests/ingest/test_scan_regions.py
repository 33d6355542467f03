"""Figure and table regions, and the reading order around them, on generated report scans read
by the real OCR and layout models (tests/ingest/report_scans.py): which region gets a caption,
which regions are empty paper or a paragraph, and which lines make a paragraph or a title."""

from __future__ import annotations

from PIL import Image

from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.pixelrag.visuals_regions import RegionVisual, ocr_region_visuals
from tests.ingest import report_scans as rs


def _visuals(ocr: OcrEngine, image: Image.Image) -> list[RegionVisual]:
    return ocr_region_visuals(ocr.read(image), 1, min_side=0.08, max_regions=8)


def test_one_caption_goes_to_one_region_the_figure_above_it(ocr: OcrEngine) -> None:
    """The model found the chart and a figure over the empty paper below its caption: both
    were captioned "Figure 3: ...", and the empty one was sent with answers as the figure."""
    found = _visuals(ocr, rs.chart_page())
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
