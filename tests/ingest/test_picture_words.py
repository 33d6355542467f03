"""A picture's words are read within the time they are given: every line is found, the largest
are recognised first, and the reading stops a batch of lines after the time is spent (real
OCR models, on a picture the test renders)."""

from __future__ import annotations

from functools import cache

from PIL import Image

from eagle_rag.ingest.pixelrag.engine import REC_BATCH, OcrEngine
from tests.ingest import scans

TITLE = "Quarterly Revenue by Region"
LABELS = [
    f"{name} {value}"
    for name, value in zip(
        ("North", "South", "East", "West", "Coast", "Inland", "Harbor", "Valley", "Ridge", "Delta"),
        range(12, 112, 10),
        strict=True,
    )
]


@cache
def _chart_words() -> Image.Image:
    """A 20 pt title over ten short 12 pt labels, one a line."""
    return scans.render(scans.text_pdf([(TITLE, "\n".join(LABELS))]))[0]


def test_no_time_left_reads_one_batch_of_the_largest_lines(ocr: OcrEngine) -> None:
    quick = ocr.words(_chart_words(), 0.0)
    texts = [line.text for line in quick.lines]
    assert 0 < len(texts) <= REC_BATCH
    assert scans.squash(TITLE) in scans.squash(" ".join(texts))


def test_time_enough_reads_every_line(ocr: OcrEngine) -> None:
    full = " ".join(line.text for line in ocr.words(_chart_words(), 60.0).lines)
    assert scans.squash(TITLE) in scans.squash(full)
    assert all(scans.squash(label) in scans.squash(full) for label in LABELS)


def test_a_blank_picture_has_no_words(ocr: OcrEngine) -> None:
    assert ocr.words(Image.new("RGB", (400, 200), "white"), 5.0).lines == ()
