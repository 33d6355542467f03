"""Uploads stream into the store under the cap, detected from their head: a large text whose head
ends inside a multi-byte character is still text, and an over-limit upload leaves nothing."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.errors import PayloadTooLargeError
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
