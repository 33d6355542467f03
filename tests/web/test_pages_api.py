"""GET /documents/{id}/pages/{n} and the UI's fragments, over HTTP against a real server."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator

import pytest
from fpdf import FPDF
from PIL import Image

from eagle_rag.api.page_images import MAX_HEIGHT, page_image
from eagle_rag.errors import NotFoundError
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.ingest import scans
from tests.ingest.documents import without_root
from tests.web.documents import MARKDOWN, text_pdf

ADMIN, SCOPED = "pages-admin-0123456789", "pages-scoped-0123456789"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    keys = [
        {"name": "admin", "key": ADMIN},
        {"name": "scoped", "key": SCOPED, "kb_names": ["mine"]},
    ]
    with running_server(
        tmp_path_factory.mktemp("pages"), server={"api_keys": keys, "rate_limit_per_minute": 0}
    ) as running:
        ids: dict[str, object] = {"server": running}
        with running.client(Authorization=f"Bearer {ADMIN}") as admin:
            for kb in ("mine", "theirs"):
                assert admin.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
            for kb, name, body in (
                ("mine", "manual.pdf", text_pdf()),
                ("mine", "guide.md", MARKDOWN),
                ("mine", "fax.tif", two_frame_tiff()),
                ("mine", "damaged.pdf", without_root(text_pdf())),
                ("theirs", "other.pdf", text_pdf()),
            ):
                submitted = admin.post(
                    "/ingest", data={"kb_name": kb}, files={"file": (name, body)}
                ).json()
                assert wait_for_task(admin, submitted["job_id"])["status"] == "completed"
                ids[name] = submitted["document_id"]
        yield ids


def two_frame_tiff() -> bytes:
    """A two-page scan: English on page 1, Chinese on page 2 (A6 landscape, 150 dpi)."""
    first, second = scans.en_page(), scans.zh_page()
    return scans.encode(first, "TIFF", save_all=True, append_images=[second])


def _client(ids: dict[str, object], key: str) -> object:
    server = ids["server"]
    assert isinstance(server, RunningServer)
    return server.client(Authorization=f"Bearer {key}")


def test_a_pdf_page_is_a_png_of_the_page_with_cache_headers(secured: dict[str, object]) -> None:
    with _client(secured, SCOPED) as client:  # type: ignore[attr-defined]
        response = client.get(f"/documents/{secured['manual.pdf']}/pages/2", params={"width": 420})
        assert response.status_code == 200
        assert response.headers["content-type"] == "image/png"
        assert response.headers["x-page-count"] == "2"
        assert "max-age" in response.headers["cache-control"]
        assert "private" in response.headers["cache-control"]
        image = Image.open(io.BytesIO(response.content))
        assert image.width == 420 and abs(image.width / image.height - 210 / 297) < 0.01
        assert image.convert("L").getextrema()[0] < 100  # there is dark text on the page
        first = client.get(f"/documents/{secured['manual.pdf']}/pages/1", params={"width": 420})
        assert hashlib.sha256(first.content).digest() != hashlib.sha256(response.content).digest()
        etag = response.headers["etag"]
        # Weakly, in a list, or "*": a cache or a proxy may send any (only the exact tag was).
        for held in (etag, f"W/{etag}", f'"other", {etag}', "*"):
            again = client.get(
                f"/documents/{secured['manual.pdf']}/pages/2",
                params={"width": 420},
                headers={"If-None-Match": held},
            )
            assert again.status_code == 304 and not again.content, held
        changed = client.get(
            f"/documents/{secured['manual.pdf']}/pages/2",
            params={"width": 420},
            headers={"If-None-Match": '"other"'},
        )
        assert changed.status_code == 200


def test_pages_out_of_range_and_unpaged_documents_are_404(secured: dict[str, object]) -> None:
    with _client(secured, SCOPED) as client:  # type: ignore[attr-defined]
        for page in (0, 3, 99):
            missing = client.get(f"/documents/{secured['manual.pdf']}/pages/{page}")
            assert missing.status_code == 404, page
            assert missing.json()["code"] == "not_found"
        assert (
            "out of range (1..2)"
            in client.get(f"/documents/{secured['manual.pdf']}/pages/3").json()["message"]
        )
        markdown = client.get(f"/documents/{secured['guide.md']}/pages/1")
        assert markdown.status_code == 404 and "no page images" in markdown.json()["message"]
        assert client.get("/documents/nope/pages/1").status_code == 404
        too_wide = client.get(f"/documents/{secured['manual.pdf']}/pages/1", params={"width": 9000})
        assert too_wide.status_code == 422


def test_pages_follow_the_key_scope(secured: dict[str, object]) -> None:
    with _client(secured, SCOPED) as client:  # type: ignore[attr-defined]
        hidden = client.get(f"/documents/{secured['other.pdf']}/pages/1")
        assert hidden.status_code == 404 and "theirs" not in hidden.text
    server = secured["server"]
    assert isinstance(server, RunningServer)
    with server.client() as anonymous:
        assert anonymous.get(f"/documents/{secured['manual.pdf']}/pages/1").status_code == 401
        namespaced = anonymous.get(
            f"/documents/{secured['manual.pdf']}/pages/1",
            headers={"Authorization": f"Bearer {ADMIN}", "X-Eagle-Namespace": "other"},
        )
        assert namespaced.status_code == 403


def test_fragments_need_the_key_and_show_only_its_kbs(secured: dict[str, object]) -> None:
    server = secured["server"]
    assert isinstance(server, RunningServer)
    with server.client() as anonymous:
        assert anonymous.get("/").status_code == 200  # the shell is public, its data is not
        assert anonymous.get("/ui/fragments/kbs").status_code == 401
    with _client(secured, SCOPED) as client:  # type: ignore[attr-defined]
        rows = client.get("/ui/fragments/kbs").text
        assert 'data-kb="mine"' in rows and "theirs" not in rows
        assert 'data-count="documents">4<' in rows
        assert (
            client.get("/ui/fragments/documents", params={"kb_name": "theirs"}).status_code == 403
        )
        hidden = client.get(f"/ui/fragments/document/{secured['other.pdf']}")
        assert hidden.status_code == 404 and "theirs" not in hidden.text
        assert "theirs" not in client.get("/ui/fragments/kb-picker").text
        page = client.get("/ui/ask")
        assert "script-src 'self'" in page.headers["content-security-policy"]


def test_every_frame_of_a_tiff_is_a_png_page_at_the_asked_width(
    secured: dict[str, object],
) -> None:
    url = f"/documents/{secured['fax.tif']}/pages"
    with _client(secured, SCOPED) as client:  # type: ignore[attr-defined]
        second = client.get(f"{url}/2", params={"width": 600})
        assert second.status_code == 200, second.text
        assert second.headers["content-type"] == "image/png"
        assert second.headers["x-page-count"] == "2"
        image = Image.open(io.BytesIO(second.content))
        assert image.format == "PNG" and image.width == 600
        aspect = scans.PAGE_MM[0] / scans.PAGE_MM[1]
        assert abs(image.width / image.height - aspect) < 0.02
        first = client.get(f"{url}/1", params={"width": 300})
        assert Image.open(io.BytesIO(first.content)).width == 300
        assert client.get(f"{url}/3").status_code == 404


def test_a_repaired_pdf_previews_like_any_other(secured: dict[str, object]) -> None:
    with _client(secured, SCOPED) as client:  # type: ignore[attr-defined]
        response = client.get(f"/documents/{secured['damaged.pdf']}/pages/1", params={"width": 420})
    assert response.status_code == 200, response.text
    image = Image.open(io.BytesIO(response.content))
    assert image.width == 420 and image.convert("L").getextrema()[0] < 100


def test_an_image_document_is_its_own_single_page() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buffer, format="PNG")
    image = page_image(buffer.getvalue(), "image/png", 1, 500)
    assert image.media_type == "image/png" and image.pages == 1
    assert Image.open(io.BytesIO(image.content)).size == (500, 375)
    with pytest.raises(NotFoundError):
        page_image(buffer.getvalue(), "image/png", 2, 500)


def test_a_tall_page_is_scaled_to_the_height_cap() -> None:
    strip = io.BytesIO()
    Image.new("RGB", (100, 5000), "white").save(strip, format="PNG")  # a till receipt
    image = Image.open(io.BytesIO(page_image(strip.getvalue(), "image/png", 1, 2400).content))
    assert image.height == MAX_HEIGHT and image.width == round(100 * MAX_HEIGHT / 5000)
    pdf = FPDF(unit="mm", format=(80, 3000))  # a receipt printed to PDF
    pdf.add_page()
    tall = page_image(bytes(pdf.output()), "application/pdf", 1, 2400).content
    assert Image.open(io.BytesIO(tall)).height <= MAX_HEIGHT


def test_the_document_list_is_paged_not_loaded_whole(server: RunningServer) -> None:
    eagle = server.eagle
    eagle.repositories.knowledge_bases.create("many", engine="eagle")
    for n in range(120):
        eagle.repositories.documents.create(
            kb_name="many",
            filename=f"doc-{n:03}.txt",
            mime_type="text/plain",
            sha256=f"{n:064x}",
            size=1,
        )
    with server.client() as client:
        first = client.get("/ui/fragments/documents", params={"kb_name": "many"}).text
        assert first.count("<tr data-document") == 50 and "doc-000.txt" in first
        assert "Page 1 of 3" in first and "120" in first
        last = client.get("/ui/fragments/documents", params={"kb_name": "many", "page": 3}).text
        assert last.count("<tr data-document") == 20 and "doc-119.txt" in last
        kbs = client.get("/ui/fragments/kbs").text
        assert 'data-count="documents">120<' in kbs and "pending 120" in kbs
        assert client.get("/ui/fragments/documents", params={"kb_name": "ghost"}).status_code == 404


def test_the_kb_list_is_paged_with_counts_per_kb(server: RunningServer) -> None:
    eagle = server.eagle
    for n in range(30):
        eagle.repositories.knowledge_bases.create(f"shelf-{n:02}")
    with server.client() as client:
        total = len(client.get("/knowledge_bases").json())
        first = client.get("/ui/fragments/kbs").text
        assert first.count("<tr data-kb=") == 25
        assert f"Page 1 of {-(-total // 25)}" in first
        second = client.get("/ui/fragments/kbs", params={"page": 2}).text
        assert second.count("<tr data-kb=") == total - 25
        assert client.get("/ui/fragments/kbs", params={"page": 0}).status_code == 422
