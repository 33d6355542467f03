"""Figures and tables from rapid-layout regions: a scanned page's and a photographed page's
figure and table become visual chunks with their anchors (real OCR and layout models through
the real pipeline), a chart drawn in pieces on a text page is found by the layout model, and
the bounds (size, count, duplicates) hold."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.ingest.pixelrag.engine import OcrEngine, OcrLine, OcrPage, Region
from eagle_rag.ingest.pixelrag.visuals_pdf import PdfVisualOptions, pdf_visuals
from eagle_rag.ingest.pixelrag.visuals_regions import (
    METADATA_KEY,
    from_metadata,
    ocr_region_visuals,
    region_visuals,
)
from tests.ingest import scans
from tests.ingest import visual_docs as vd

ASYNC = pytest.mark.asyncio(loop_scope="module")  # only the tests through the app are async


def _visuals(app: EagleApp, document_id: str) -> dict[str, dict[str, Any]]:
    rows = app.vectors.query(VISUAL_COLLECTION, f.eq("document_id", document_id))
    return {r["chunk_type"]: r for r in rows}


def _check_crops(app: EagleApp, document_id: str) -> None:
    """The page's tile, and its figure and table cut out with the four anchors."""
    visuals = _visuals(app, document_id)
    assert set(visuals) == {"tile", "image", "table"}
    figure, table = visuals["image"], visuals["table"]
    assert "Turbine output by region" in figure["content_summary"]
    assert figure["metadata"]["caption"].startswith("Figure 1")
    assert "Gearbox" in table["content_summary"] and "Yaw drive" in table["content_summary"]
    assert "Maintenance intervals" in table["content_summary"]
    texts = {
        r["id"]: r for r in app.vectors.query(TEXT_COLLECTION, f.eq("document_id", document_id))
    }
    for visual, (top, bottom) in ((figure, (0.1, 0.45)), (table, (0.4, 0.65))):
        x0, y0, x1, y1 = visual["metadata"]["bbox"]
        assert top < y0 < y1 < bottom and x1 - x0 > 0.4  # the region, not the page
        source = texts[visual["source_chunk_id"]]  # a text chunk of this document, same page
        assert visual["page"] == 1 and 1 in source["page_nums"]
        assert visual["parent_section"] == source["path"]
        stored = b"".join(app.objects.open(visual["metadata"]["object_key"]))
        picture = Image.open(io.BytesIO(stored))
        assert picture.size == (visual["metadata"]["width"], visual["metadata"]["height"])
        assert picture.height < visuals["tile"]["metadata"]["height"] / 2  # a crop of the page


@ASYNC
async def test_a_scanned_page_gives_its_figure_and_table_as_visuals(app: EagleApp, kb: str) -> None:
    page = scans.render(vd.figure_and_table_pdf(), dpi=100)[0]
    document_id = await vd.ingest_completed(app, kb, vd.scanned_a4([page]), "scanned-report.pdf")
    _check_crops(app, document_id)


@ASYNC
async def test_a_photographed_page_gives_its_figure_and_table_as_visuals(
    app: EagleApp, kb: str
) -> None:
    page = scans.render(vd.figure_and_table_pdf(), dpi=100)[0]
    document_id = await vd.ingest_completed(app, kb, scans.encode(page, "PNG"), "report-photo.png")
    _check_crops(app, document_id)


def test_a_chart_drawn_in_pieces_is_found_by_the_layout_model() -> None:
    data = vd.scatter_pdf()
    options = PdfVisualOptions()
    assert pdf_visuals(data, frozenset(), options) == []  # too many pieces to group
    [chart] = pdf_visuals(data, frozenset(), options, layout=OcrEngine().layout)
    assert chart.kind == "image" and chart.page == 1
    assert chart.caption.startswith(vd.SCATTER_CAPTION)
    x0, y0, x1, y1 = chart.bbox
    assert x1 - x0 > 0.5 and 0.1 < y0 < y1 < 0.6
    assert Image.open(io.BytesIO(chart.image)).width > 200


@pytest.mark.parametrize("table_intro", [True, False])
def test_a_table_gets_its_own_caption_not_the_figures_above_it(table_intro: bool) -> None:
    """The band above a table was read top-down, so a figure's caption printed above the
    table's own ("Table 1: ...") captioned the table."""
    data = vd.figure_and_table_pdf(table_intro=table_intro)
    found = {v.kind: v for v in pdf_visuals(data, frozenset(), PdfVisualOptions())}
    assert found["table"].caption == vd.TABLE_CAPTION
    assert found["image"].caption == vd.FIGURE_CAPTION


def test_the_layout_pass_on_text_pages_stops_at_its_budget() -> None:
    import time

    calls: list[int] = []

    def slow_layout(image: Image.Image) -> list[Region]:
        calls.append(image.width)
        started = time.thread_time()
        while time.thread_time() - started < 0.05:  # the model's CPU work
            pass
        return []

    from eagle_rag.ingest.pixelrag.cpu_budget import CpuBudget
    from eagle_rag.ingest.pixelrag.visuals_pdf import LayoutPass

    budget = LayoutPass(slow_layout, CpuBudget(0.04))
    page = Image.new("RGB", (50, 50), "white")
    assert budget.regions(page) == [] and budget.regions(page) == ()
    assert len(calls) == 1


def test_waiting_for_cores_does_not_spend_the_layout_budget() -> None:
    """The budget is CPU time: a page that waits (shared cores, a loaded machine) still gets
    its layout pass, so the same document gives the same charts under any load."""
    import time

    calls: list[int] = []

    def waiting_layout(image: Image.Image) -> list[Region]:
        calls.append(image.width)
        time.sleep(0.05)  # its turn on the CoreBudget, another process's load
        return []

    from eagle_rag.ingest.pixelrag.cpu_budget import CpuBudget
    from eagle_rag.ingest.pixelrag.visuals_pdf import LayoutPass

    budget = LayoutPass(waiting_layout, CpuBudget(0.04))
    page = Image.new("RGB", (50, 50), "white")
    for _ in range(3):
        assert budget.regions(page) == []
    assert len(calls) == 3


def _region(kind: str, bbox: tuple[float, float, float, float], score: float = 0.9) -> Region:
    return Region(kind, bbox, score)


def test_regions_are_bounded_by_size_count_and_duplicates() -> None:
    regions = [
        _region("figure", (0.1, 0.1, 0.5, 0.4), 0.95),
        _region("table", (0.11, 0.1, 0.5, 0.41), 0.7),  # the same chart seen as a table
        _region("figure", (0.6, 0.1, 0.63, 0.13)),  # a logo
        _region("figure", (0.0, 0.0, 1.0, 0.95)),  # the page itself
        _region("table", (0.1, 0.5, 0.9, 0.7), 0.8),
        _region("figure", (0.1, 0.75, 0.5, 0.95), 0.6),
        _region("text", (0.1, 0.42, 0.9, 0.48)),
        _region("figure_caption", (0.1, 0.41, 0.5, 0.43)),
    ]

    def text_in(box: tuple[float, float, float, float]) -> str:
        return "Figure 1: Output" if box == (0.1, 0.41, 0.5, 0.43) else f"text at {box[1]}"

    found = region_visuals(regions, text_in, 4, min_side=0.08, max_regions=2)
    assert [(v.kind, v.bbox) for v in found] == [
        ("image", (0.1, 0.1, 0.5, 0.4)),
        ("table", (0.1, 0.5, 0.9, 0.7)),
    ]
    assert found[0].caption == "Figure 1: Output" and found[0].page == 4
    assert found[1].caption == "" and found[1].text == "text at 0.5"
    assert region_visuals(regions, text_in, 4, min_side=0.08, max_regions=0) == []


def test_a_rotated_scans_regions_are_mapped_back_onto_the_stored_page() -> None:
    """OCR read the page turned 90°: its boxes are on the upright page."""
    page = OcrPage(
        1000,
        800,
        90,
        (OcrLine("Figure 2: Gearbox wear", (0.1, 0.42, 0.4, 0.45), 0.9),),
        (
            _region("figure", (0.1, 0.1, 0.5, 0.4)),
            _region("figure_caption", (0.1, 0.42, 0.4, 0.45)),
        ),
    )
    [figure] = ocr_region_visuals(page, 3)
    assert figure.bbox == pytest.approx((0.6, 0.1, 0.9, 0.5))
    assert figure.caption == "Figure 2: Gearbox wear"


def test_recorded_regions_survive_the_metadata_and_bad_entries_are_skipped() -> None:
    page = OcrPage(100, 100, 0, (), (_region("table", (0.1, 0.2, 0.9, 0.6)),))
    [table] = ocr_region_visuals(page, 2)
    metadata = {
        METADATA_KEY: [
            table.to_dict(),
            {"page": "x", "kind": "image", "bbox": [0, 0, 1, 1]},
            {"page": 3, "kind": "chart", "bbox": [0, 0, 1, 1]},
            {"kind": "image"},
        ]
    }
    assert from_metadata(metadata) == {2: [table]}
    assert from_metadata({}) == {}
