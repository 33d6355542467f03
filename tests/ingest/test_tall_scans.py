"""Tall pages (a full-length screenshot, a receipt) are read in overlapping bands: fitted whole to
rapidocr's 2,000-pixel input, a page twelve screens tall read as garbage ("Thc plan: recorded no
Iost dime Injurics"), and not one of its twelve paragraphs was found."""

from __future__ import annotations

import itertools

import pytest
from PIL import Image

from eagle_rag.ingest import detect as d
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.ingest.pixelrag.tiles import MIN_OVERLAP, bands
from tests.ingest import scans


@pytest.mark.parametrize(
    ("width", "height"), [(875, 7452), (1170, 15000), (3000, 9000), (640, 3001)]
)
def test_bands_cover_the_page_overlap_and_share_it_out_exactly_once(
    width: int, height: int
) -> None:
    found = bands(width, height, 2000)
    assert len(found) > 1
    assert found[0].top == 0 and found[-1].bottom == height
    assert all(b.bottom - b.top <= max(2000, width) for b in found)
    for earlier, later in itertools.pairwise(found):
        assert earlier.bottom - later.top >= MIN_OVERLAP  # a cut line is whole in one of them
        assert earlier.own_bottom == later.own_top  # every row is owned, and by one band
        # the shared boundary is well inside both bands, away from either's cut edge
        assert later.own_top - later.top >= MIN_OVERLAP // 2
        assert earlier.bottom - earlier.own_bottom >= MIN_OVERLAP // 2
    assert found[0].own_top == 0 and found[-1].own_bottom == height


@pytest.mark.parametrize(("width", "height"), [(875, 621), (875, 2900), (9000, 875), (2500, 4000)])
def test_ordinary_and_wide_pages_are_read_whole(width: int, height: int) -> None:
    assert [(b.top, b.bottom) for b in bands(width, height, 2000)] == [(0, height)]


@pytest.mark.slow
def test_a_page_twelve_screens_tall_reads_every_paragraph_once_with_its_box() -> None:
    page = scans.en_page()
    tall = Image.new("RGB", (page.width, page.height * 12), "white")  # 875 by 7,452
    for index in range(12):
        tall.paste(page, (0, page.height * index))
    engine = OcrEngine()
    parsed = ImageParser(engine).parse(ParseContext(scans.encode(tall, "PNG"), "scroll.png", d.PNG))
    assert [s.heading for s in parsed.sections if s.heading] == [scans.EN_TITLE] * 12
    # each paragraph whole, in one section (not its first line joined to the title above it)
    assert [s.content for s in parsed.sections if s.content] == [scans.EN_BODY] * 12
    squashed = " ".join(parsed.text.split())
    assert squashed.count("no lost time injuries this quarter") == 12  # once each, none twice
    assert squashed.count("completed on schedule") == 12
    tops = sorted(
        box.bbox[1]
        for section in parsed.sections
        for box in section.boxes
        if "injuries" in section.content[box.start : box.end]
    )
    assert len(tops) == 12
    # Each copy's line sits in its own twelfth of the page (boxes are in page coordinates).
    for index, top in enumerate(tops):
        assert index / 12 < top < (index + 1) / 12
