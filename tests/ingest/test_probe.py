"""The page probe: which PDF pages are read from their text layer and which by OCR."""

from __future__ import annotations

from eagle_rag.ingest.pixelrag.probe import (
    A4_AREA,
    chars_outside_margins,
    in_margin,
    probe,
)

A4 = (595.0, 842.0)
PARAGRAPH = "The plant recorded no lost time injuries this quarter. " * 40  # ~1,900 characters
STAMP = "Case 1:20-cv-01234-ABC Document 45 Filed 03/12/21 Page 3 of 17"


def test_a_page_of_text_is_read_from_its_text_layer() -> None:
    page = probe(PARAGRAPH, *A4, images=0)
    assert page.text_usable and not page.needs_ocr


def test_an_image_only_page_is_ocrd_and_a_blank_one_is_not() -> None:
    assert probe("", *A4, images=1, image_cover=1.0).needs_ocr
    blank = probe("", *A4, images=0)
    assert not blank.text_usable and not blank.needs_ocr


def test_a_scan_under_a_stamp_is_ocrd() -> None:
    # 53 visible characters on A4: over the 25 that count as "some text", far under a page's.
    page = probe(STAMP, *A4, images=1, image_cover=1.0, body_chars=0)
    assert page.density > 25
    assert page.stamped_scan and page.needs_ocr


def test_a_sparse_layer_over_a_scan_is_a_stamp_even_in_the_body() -> None:
    # A fax header set a little low: not in the margin, but still a line over a scanned page.
    header = "FROM: ACME LEGAL  FAX 555 0100  12/03/2021 09:14  P.003/017"
    page = probe(header, *A4, images=1, image_cover=0.95, body_chars=len(header))
    assert page.needs_ocr


def test_a_dense_stamp_in_the_margins_of_a_small_scan_is_still_a_stamp() -> None:
    # On an A6 page the same stamp is 220 characters per A4: only its place gives it away.
    a6 = (419.5, 297.6)
    page = probe(STAMP + " ACME-0004512", *a6, images=1, image_cover=1.0, body_chars=0)
    assert page.density > 200
    assert page.needs_ocr


def test_a_text_page_with_a_big_photo_keeps_its_text_layer() -> None:
    photo = probe(PARAGRAPH, *A4, images=1, image_cover=0.6, body_chars=len(PARAGRAPH))
    background = probe(PARAGRAPH, *A4, images=1, image_cover=1.0, body_chars=len(PARAGRAPH))
    assert photo.text_usable and not photo.needs_ocr
    assert background.text_usable and not background.needs_ocr


def test_a_stamp_on_a_page_with_a_small_figure_is_not_a_scan() -> None:
    page = probe(PARAGRAPH[:300], *A4, images=1, image_cover=0.2, body_chars=300)
    assert page.text_usable and not page.needs_ocr


def test_a_garbled_text_layer_is_ocrd_even_without_images() -> None:
    garbled = "\ue000\ue001\ue002 " * 200
    page = probe(garbled, *A4, images=0)
    assert page.garbled and not page.text_usable and page.needs_ocr


def test_density_is_per_a4_area() -> None:
    assert probe("x" * 100, 595.0, 421.0, images=0).density == 100 * A4_AREA / (595.0 * 421.0)


def test_margins() -> None:
    assert in_margin((0.1, 0.01, 0.9, 0.03))  # a header line
    assert in_margin((0.8, 0.96, 0.95, 0.99))  # a Bates number
    assert in_margin((0.02, 0.3, 0.05, 0.7))  # a side stamp
    assert not in_margin((0.1, 0.11, 0.9, 0.14))  # a body line near the top
    lines = [(STAMP, (0.05, 0.01, 0.9, 0.03)), ("Body text here", (0.1, 0.4, 0.9, 0.42))]
    assert chars_outside_margins(lines) == len("Bodytexthere")
