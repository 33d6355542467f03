"""Steps the browser tests share: create a KB through the form, upload, wait, stored boxes."""

from __future__ import annotations

from typing import Any

from eagle_rag.index.collections import DENSE_FIELD, TEXT_COLLECTION, text_fields
from eagle_rag.index.filters import eq
from tests.api.server import RunningServer, wait_for_task
from tests.web.documents import paragraph_box


def create_kb(page: Any, url: str, name: str, chunk_size: int = 64) -> None:
    """Create a KB through the schema-driven form on the KB screen."""
    page.goto(url + "/")
    page.wait_for_selector("#engine-form [name=creation__chunk_size]")
    page.fill("#kb_name", name)
    page.fill("[name=creation__chunk_size]", str(chunk_size))
    page.fill("[name=creation__chunk_overlap]", "4")
    page.click("#create-kb button[type=submit]")
    page.wait_for_selector(f"#kb-list tr[data-kb='{name}']")


def choose_files(page: Any, files: list[tuple[str, str, bytes]]) -> None:
    page.set_input_files(
        "#file-input", files=[{"name": n, "mimeType": m, "buffer": b} for n, m, b in files]
    )


def drop_files(page: Any, files: list[tuple[str, str, bytes]]) -> None:
    """A real drop event on the drop zone, carrying File objects built in the page."""
    payload = [{"name": n, "type": m, "bytes": list(b)} for n, m, b in files]
    page.evaluate(
        """(files) => {
          const transfer = new DataTransfer();
          for (const f of files) {
            transfer.items.add(new File([new Uint8Array(f.bytes)], f.name, {type: f.type}));
          }
          const zone = document.getElementById('dropzone');
          const init = {dataTransfer: transfer, bubbles: true, cancelable: true};
          zone.dispatchEvent(new DragEvent('dragover', init));
          zone.dispatchEvent(new DragEvent('drop', init));
        }""",
        payload,
    )


def upload_row(page: Any, name: str) -> Any:
    return page.locator("#uploads li").filter(
        has=page.locator(".name").get_by_text(name, exact=True)
    )


def wait_status(page: Any, name: str, status: str, timeout: float = 90_000) -> None:
    page.wait_for_function(
        """([name, status]) => [...document.querySelectorAll('#uploads li')]
             .some(li => li.dataset.upload === name && li.dataset.status === status)""",
        arg=[name, status],
        timeout=timeout,
    )


def kb_with_file(server: RunningServer, kb: str, filename: str, content: bytes | str) -> str:
    """A new KB holding one ingested file, through the API; the document's id."""
    with server.client() as client:
        assert client.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
        job = client.post("/ingest", data={"kb_name": kb}, files={"file": (filename, content)})
        assert wait_for_task(client, job.json()["job_id"])["status"] == "completed"
    return str(job.json()["document_id"])


def document_id(server: RunningServer, kb: str, filename: str) -> str:
    with server.client() as client:
        documents = client.get("/documents", params={"kb_name": kb}).json()
    return next(d["document_id"] for d in documents if d["filename"] == filename)


Boxes = dict[str, list[dict[str, Any]]]


def stored_boxes(server: RunningServer, doc_id: str, page_count: int) -> Boxes:
    """Each chunk's stored boxes; a PDF whose chunks carry none (text PDFs before the OCR work
    lands) gets known ones written into its chunks' metadata: the paragraph's place on each page
    the chunk covers, and for the first chunk also the next page (a chunk across a page break)."""
    vectors = server.eagle.vectors
    fields = [*text_fields(), DENSE_FIELD]
    rows = vectors.query(TEXT_COLLECTION, eq("document_id", doc_id), output_fields=fields)
    if any((r.get("metadata") or {}).get("boxes") for r in rows):
        return {r["id"]: list((r.get("metadata") or {}).get("boxes") or []) for r in rows}
    rows.sort(key=lambda r: r["chunk_index"])
    for position, row in enumerate(rows):
        pages = sorted(set(row.get("page_nums") or [1]))
        if position == 0 and pages[-1] < page_count:
            pages = sorted({*pages, pages[-1] + 1})
            row["page_nums"] = pages
        row["metadata"] = {
            **(row.get("metadata") or {}),
            "boxes": [{"page": p, "bbox": paragraph_box()} for p in pages],
        }
    vectors.upsert(TEXT_COLLECTION, rows)
    vectors.flush([TEXT_COLLECTION])
    return {r["id"]: r["metadata"]["boxes"] for r in rows}
