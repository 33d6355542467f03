"""Scans through the real app over HTTP: upload, OCR in the worker, boxes on chunks and hits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.ingest import scans


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(Path(tmp_path_factory.mktemp("scans"))) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as http:
        assert http.post("/knowledge_bases", json={"kb_name": "scans"}).status_code == 201
        yield http


def _upload(client: httpx.Client, name: str, data: bytes) -> dict[str, object]:
    answer = client.post("/ingest", data={"kb_name": "scans"}, files={"file": (name, data)})
    assert answer.status_code == 202, answer.text
    return wait_for_task(client, answer.json()["job_id"], timeout=180)


def _chunks(client: httpx.Client, document_id: str) -> list[dict[str, object]]:
    answer = client.get(f"/documents/{document_id}/chunks")
    assert answer.status_code == 200
    chunks: list[dict[str, object]] = answer.json()["chunks"]
    return chunks


def test_a_scanned_pdf_ingests_and_its_chunks_and_hits_carry_boxes(client: httpx.Client) -> None:
    task = _upload(client, "scan.pdf", scans.scanned_pdf([scans.en_page(), scans.zh_page()]))
    assert task["status"] == "completed", task
    document_id = str(task["document_id"])
    chunks = _chunks(client, document_id)
    text = [c for c in chunks if c["type"] == "text"]
    assert {tuple(c["page_nums"]) for c in text} == {(1,), (2,)}  # type: ignore[arg-type]
    for chunk in text:
        boxes = chunk["boxes"]
        assert isinstance(boxes, list) and boxes
        assert [b["page"] for b in boxes] == list(chunk["page_nums"])  # type: ignore[call-overload]
        assert all(0 <= v <= 1 for b in boxes for v in b["bbox"])
    paths = {str(c["path"]) for c in text}
    assert any(p.endswith(scans.ZH_TITLE) for p in paths)  # the OCR'd title is a section
    structure = client.get(f"/documents/{document_id}/structure").json()["structure"]
    assert {p for s in structure["sections"] for p in s["page_nums"]} == {1, 2}
    found = client.post("/search", json={"query": "叉车检查", "kb_name": "scans"}).json()
    best = found["sources"]["text"][0]
    assert best["document_id"] == document_id and best["page_nums"] == [2]
    assert best["boxes"] and best["boxes"][0]["page"] == 2


def test_an_image_upload_is_ocrd_and_a_text_file_has_no_boxes(client: httpx.Client) -> None:
    task = _upload(client, "notice.jpg", scans.encode(scans.en_page(), "JPEG"))
    assert task["status"] == "completed", task
    found = client.post("/search", json={"query": "forklift inspections", "kb_name": "scans"})
    sources = found.json()["sources"]["text"]
    best = next(s for s in sources if s["document_id"] == task["document_id"])  # the PDF too
    assert best["boxes"][0]["page"] == 1 and best["metadata"]["source_type"] == "image"
    plain = _upload(client, "plain.txt", b"A plain note about forklift keys.")
    assert all(c["boxes"] == [] for c in _chunks(client, str(plain["document_id"])))


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("bomb.png", lambda: scans.encode(Image.new("1", (10_000, 9_000), 1), "PNG"), "limit"),
        (
            "blank.png",
            lambda: scans.encode(Image.new("RGB", (600, 400), "white"), "PNG"),
            "no text",
        ),
        ("cut.jpg", lambda: scans.encode(scans.en_page(), "JPEG")[:3000], "truncated"),
    ],
)
def test_bad_images_fail_their_task_with_a_reason_and_write_nothing(
    server: RunningServer, client: httpx.Client, name: str, make: object, reason: str
) -> None:
    task = _upload(client, name, make())  # type: ignore[operator]
    assert task["status"] == "failed" and reason in str(task["error"])
    assert _chunks(client, str(task["document_id"])) == []
