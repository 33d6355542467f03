"""Uploads stream into the store under the cap, detected from their head: a large text whose head
ends inside a multi-byte character is still text, and an over-limit upload leaves nothing."""

from __future__ import annotations

import io
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.errors import InvalidInputError, PayloadTooLargeError
from eagle_rag.ingest.service import HEAD_BYTES, IngestService, text_sample
from eagle_rag.settings import load_settings

in_loop = pytest.mark.asyncio(loop_scope="module")
LINE = "北京大学是中国著名的高等学府。\n".encode()  # three bytes a character


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    data = Path(tmp_path_factory.mktemp("bounded-upload"))
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"ingest": {"max_file_bytes": 3 * HEAD_BYTES}},
    )
    application = await bootstrap(settings, start_queue=False)
    application.repositories.knowledge_bases.create("docs")
    yield application
    await application.stop()


class _Parked:
    """A queue that only keeps what it is given (like a broker nobody works on)."""

    owner: str | None = None
    lease_s: float | None = None

    def __init__(self) -> None:
        self.ids: list[str] = []

    def submit(self, task_id: str) -> None:
        self.ids.append(task_id)


def _cut_inside_a_character(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_a_head_cut_inside_a_character_is_trimmed_to_text() -> None:
    heads = [(b"a" * n + LINE * (HEAD_BYTES // len(LINE) + 1))[:HEAD_BYTES] for n in range(3)]
    head = next(h for h in heads if _cut_inside_a_character(h))
    sample = text_sample(head, whole=False)
    assert 0 < len(head) - len(sample) < 4 and sample.decode("utf-8")
    assert text_sample(head, whole=True) == head


@in_loop
async def test_a_large_text_upload_is_detected_from_its_head(app: EagleApp) -> None:
    data = LINE * (2 * HEAD_BYTES // len(LINE) + 1)  # two heads and a bit, not a multiple
    parked = _Parked()
    service = IngestService(app, parked)
    submission = service.submit_file(kb_name="docs", filename="big.txt", stream=io.BytesIO(data))
    assert parked.ids == [submission.job_id]
    document = app.repositories.documents.get(submission.document_id)
    assert (document.mime_type, document.size) == ("text/plain", len(data))
    assert document.object_key is not None
    assert b"".join(app.objects.open(document.object_key)) == data


@in_loop
async def test_an_over_limit_upload_stores_nothing(app: EagleApp) -> None:
    before = app.objects.list(f"{app.namespace}/")
    with pytest.raises(PayloadTooLargeError):
        app.ingest.submit_file(
            kb_name="docs", filename="huge.txt", stream=io.BytesIO(b"a" * (3 * HEAD_BYTES + 1))
        )
    assert app.objects.list(f"{app.namespace}/") == before
    assert app.repositories.documents.count(kb_name="docs") <= 1


def _noise_image(fmt: str, frames: int = 1, **options: object) -> bytes:
    """An image that compresses badly: larger than the head detection reads."""
    from PIL import Image

    rng = random.Random(7)
    pages = [Image.frombytes("L", (1400, 1000), rng.randbytes(1400 * 1000)) for _ in range(frames)]
    out = io.BytesIO()
    pages[0].save(out, format=fmt, save_all=frames > 1, append_images=pages[1:], **options)
    return out.getvalue()


@in_loop
@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("scan.png", _noise_image("PNG")),
        # LZW: the frames' directory is written after their pixels, past the head.
        ("scan.tiff", _noise_image("TIFF", compression="tiff_lzw")),
    ],
)
async def test_an_image_larger_than_the_head_is_checked_whole(
    app: EagleApp, filename: str, data: bytes
) -> None:
    """Every PNG over 1 MiB was refused as "corrupt: Truncated File Read", and an LZW TIFF as
    "cannot identify image file <_io.BytesIO object ...>": they were checked from the head."""
    assert len(data) > HEAD_BYTES
    parked = _Parked()
    submission = IngestService(app, parked).submit_file(
        kb_name="docs", filename=filename, stream=io.BytesIO(data)
    )
    assert parked.ids == [submission.job_id]
    assert app.repositories.documents.get(submission.document_id).size == len(data)


@in_loop
async def test_a_large_image_corrupt_past_the_head_is_refused_and_leaves_nothing(
    app: EagleApp,
) -> None:
    data = bytearray(_noise_image("PNG"))
    data[-HEAD_BYTES // 2] ^= 0xFF  # a chunk's checksum no longer matches, far past the head
    before = app.objects.list(f"{app.namespace}/")
    with pytest.raises(InvalidInputError, match="the image is corrupt"):
        app.ingest.submit_file(kb_name="docs", filename="bad.png", stream=io.BytesIO(bytes(data)))
    assert app.objects.list(f"{app.namespace}/") == before
    tiff = _noise_image("TIFF", compression="tiff_lzw")
    without_its_directory = tiff[: int.from_bytes(tiff[4:8], "little")]  # cut where it starts
    assert len(without_its_directory) > HEAD_BYTES
    with pytest.raises(InvalidInputError) as refused:
        app.ingest.submit_file(
            kb_name="docs", filename="cut.tiff", stream=io.BytesIO(without_its_directory)
        )
    assert refused.value.message == "the image is corrupt: not a readable image/tiff file"
    assert app.objects.list(f"{app.namespace}/") == before
