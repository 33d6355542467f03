"""Knowledge bases, ingest, tasks and documents through a real server."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import httpx
import pytest

from tests.api.server import RunningServer, sse_events, wait_for_task
from tests.ingest import documents as docs
from tests.retrieval.conftest import GARDEN, SOLAR


@pytest.fixture(scope="module")
def client(server: RunningServer) -> httpx.Client:
    return server.client()


@pytest.fixture(scope="module")
def solar(client: httpx.Client) -> dict[str, str]:
    assert client.post("/knowledge_bases", json={"kb_name": "energy"}).status_code == 201
    answer = client.post(
        "/ingest",
        data={"kb_name": "energy", "tags": "guide,solar", "metadata": json.dumps({"year": 2021})},
        files={"file": ("solar.md", SOLAR.encode(), "text/markdown")},
    )
    assert answer.status_code == 202, answer.text
    submission = answer.json()
    assert wait_for_task(client, submission["job_id"])["status"] == "completed"
    return submission


def test_knowledge_base_lifecycle(client: httpx.Client) -> None:
    created = client.post(
        "/knowledge_bases",
        json={"kb_name": "scratch", "description": "tmp", "creation_settings": {"chunk_size": 64}},
    )
    assert created.status_code == 201
    assert created.json()["creation_settings"] == {"chunk_size": 64, "chunk_overlap": 4}
    assert client.post("/knowledge_bases", json={"kb_name": "scratch"}).status_code == 409
    assert "scratch" in [kb["kb_name"] for kb in client.get("/knowledge_bases").json()]
    assert client.get("/knowledge_bases/scratch").json()["documents"] == 0
    assert client.delete("/knowledge_bases/scratch").json()["deleted"] is True
    missing = client.get("/knowledge_bases/scratch")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "body",
    [
        {"kb_name": "Bad Name"},
        {"kb_name": "../etc"},
        {"kb_name": "x" * 80},
        {"kb_name": "ok", "unknown": 1},
        {},
    ],
)
def test_bad_knowledge_base_bodies_are_422(client: httpx.Client, body: dict[str, object]) -> None:
    answer = client.post("/knowledge_bases", json=body)
    assert answer.status_code == 422
    assert answer.json()["code"] == "invalid_request"


def test_ingest_then_documents(client: httpx.Client, solar: dict[str, str]) -> None:
    document_id = solar["document_id"]
    document = client.get(f"/documents/{document_id}").json()
    assert document["status"] == "completed" and document["filename"] == "solar.md"
    assert document["tags"] == ["guide", "solar"] and document["metadata"] == {"year": 2021}
    assert document["chunk_count"] > 3
    listed = client.get("/documents", params={"kb_name": "energy"}).json()
    assert [d["document_id"] for d in listed] == [document_id]
    structure = client.get(f"/documents/{document_id}/structure").json()["structure"]
    assert "Solar Guide/Installation/Wiring" in json.dumps(structure)
    chunks = client.get(f"/documents/{document_id}/chunks").json()
    assert chunks["count"] == chunks["total"] == document["chunk_count"]
    assert any(c["path"] == "Solar Guide/Installation/Wiring" for c in chunks["chunks"])
    in_order = [c["chunk_id"] for c in chunks["chunks"]]
    assert [c["chunk_index"] for c in chunks["chunks"]] == list(range(len(in_order)))
    # A long document is read in pages of its reading order, not an arbitrary `limit` of it.
    paged = [
        client.get(f"/documents/{document_id}/chunks", params={"limit": 2, "offset": at}).json()
        for at in range(0, len(in_order), 2)
    ]
    assert [c["chunk_id"] for page in paged for c in page["chunks"]] == in_order
    assert {page["total"] for page in paged} == {len(in_order)}
    assert [page["offset"] for page in paged] == list(range(0, len(in_order), 2))
    original = client.get(f"/documents/{document_id}/file")
    assert original.content == SOLAR.encode()
    assert "solar.md" in original.headers["content-disposition"]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("metadata", '{"note": "\\ud800"}', "metadata holds text that is not valid Unicode"),
        ("metadata", '{"n": ' + "9" * 5000 + "}", "metadata is not JSON"),
        ("metadata", '{"n": NaN}', "metadata is not JSON: NaN is not a JSON number"),
        ("tags", '["\\ud800"]', "tag must be"),
        # Accepted, shown on the document, left off its chunks: no year filter could match it.
        ("metadata", '{"year": "abc"}', "metadata.year must be a year"),
        ("metadata", '{"year": true}', "metadata.year must be a year"),
        # 202, then the task failed at Milvus's upsert with its own error.
        ("metadata", '{"serial": 9223372036854775808}', "metadata.serial is out of the 64-bit"),
        ("metadata", '{"w": {"x": [1, -1e999]}}', "metadata.w.x[1] must be a finite number"),
        ("metadata", '{"weight": 1e999}', "metadata.weight must be a finite number"),  # null
        # Shown on every hit as the record's own; a bridge's deletion would remove that id.
        ("metadata", '{"document_id": "deadbeef"}', "metadata key 'document_id' is a field"),
        ("metadata", '{"remote_document_id": "x1"}', "metadata key 'remote_document_id'"),
        ("metadata", '{"team": "ops", "kb_name": "other"}', "metadata key 'kb_name'"),
    ],
)
def test_form_fields_that_no_store_can_keep_are_refused(
    client: httpx.Client, solar: dict[str, str], field: str, value: str, said: str
) -> None:
    """A lone surrogate in metadata was accepted, failed at the vector store and then made
    every listing of the KB a 500; a surrogate tag, a huge integer were 500s; NaN was null."""
    before = client.get("/documents", params={"kb_name": "energy"}).json()
    refused = client.post(
        "/ingest",
        data={"kb_name": "energy", field: value},
        files={"file": ("odd.md", b"# Odd\n\nA fresh text about kites.", "text/markdown")},
    )
    assert refused.status_code == 400, refused.text
    assert said in refused.json()["message"]
    assert client.get("/documents", params={"kb_name": "energy"}).json() == before
    as_json = {"Content-Type": "application/json"}  # JSON's "\ud800" escape, as a client sends
    odd_settings = {"kb_name": "odd", "creation_settings": {"\ud800": 1}}
    made = client.post("/knowledge_bases", content=json.dumps(odd_settings), headers=as_json)
    assert made.status_code in (400, 422), made.text
    odd_filter = {"query": "kites", "filters": {"metadata": {"note": "\ud800"}}}
    found = client.post("/search", content=json.dumps(odd_filter), headers=as_json)
    assert found.status_code == 400 and "not valid Unicode" in found.json()["message"]


def test_a_quote_in_an_uploaded_file_name_is_kept(
    client: httpx.Client, solar: dict[str, str]
) -> None:
    """Browsers and httpx send a file name's double quote as %22: it was stored and shown so."""
    sent = client.post(
        "/ingest",
        data={"kb_name": "energy"},
        files={"file": ('the "final" plan.md', b"# Plan\n\nKites fly in May.", "text/markdown")},
    )
    assert sent.status_code == 202, sent.text
    document = client.get(f"/documents/{sent.json()['document_id']}").json()
    assert document["filename"] == 'the "final" plan.md'
    wait_for_task(client, sent.json()["job_id"])
    # The download named it without its quotes, and only in filename* (curl -OJ saved "file").
    said = client.get(f"/documents/{document['document_id']}/file").headers["content-disposition"]
    assert said == (
        "attachment; filename=\"the _final_ plan.md\"; filename*=UTF-8''the%20%22final%22%20plan.md"
    )


@pytest.mark.parametrize(
    ("name", "data", "charset"),
    [
        ("gbk.txt", "变压器每年检修一次，检修前必须断电。".encode("gb18030"), "GB18030"),
        (
            "sjis.txt",
            "変圧器は毎年点検します。点検の前に電源を切ってください。".encode("cp932"),
            "Shift_JIS",
        ),
        ("utf8.md", "# Ünits\n\nThe pump runs at 50 °C.".encode(), "utf-8"),
        (
            "page.html",  # its <meta> names its charset: a guessed one here would outrank it
            '<html><head><meta charset="shift_jis"></head><body><p>点検</p></body></html>'.encode(
                "cp932"
            ),
            None,
        ),
    ],
)
def test_a_text_original_is_downloaded_in_the_charset_it_was_read_in(
    client: httpx.Client, solar: dict[str, str], name: str, data: bytes, charset: str | None
) -> None:
    """Starlette labelled every text original utf-8: a GBK file showed as mojibake."""
    sent = client.post("/ingest", data={"kb_name": "energy"}, files={"file": (name, data)})
    assert sent.status_code == 202, sent.text
    wait_for_task(client, sent.json()["job_id"])
    original = client.get(f"/documents/{sent.json()['document_id']}/file")
    assert original.content == data
    if charset is None:
        assert original.headers["content-type"] == "text/html"
        return
    assert original.headers["content-type"].endswith(f"; charset={charset}")
    assert original.text == data.decode(original.encoding or "")


def test_same_bytes_again_is_a_dedup_hit(client: httpx.Client, solar: dict[str, str]) -> None:
    again = client.post(
        "/ingest",
        data={"kb_name": "energy"},
        files={"file": ("copy.md", SOLAR.encode(), "text/markdown")},
    )
    assert again.status_code == 200
    assert again.json()["dedup_hit"] is True
    assert again.json()["document_id"] == solar["document_id"]


@pytest.mark.parametrize(
    ("files", "data", "status", "code"),
    [
        (
            {"file": ("a.gif", b"GIF89a" + b"0" * 64, "image/gif")},
            {},
            415,
            "unsupported_media_type",
        ),
        ({"file": ("a.png", b"\x89PNG\r\n\x1a\n" + b"0" * 64, "image/png")}, {}, 400, None),
        ({"file": ("big.txt", b"a " * 150_000, "text/plain")}, {}, 413, "payload_too_large"),
        ({"file": ("x.pdf", docs.encrypted_pdf_bytes(), "application/pdf")}, {}, 202, None),
        ({"file": ("e.txt", b"", "text/plain")}, {}, 400, "invalid_input"),
        ({}, {"url": "http://127.0.0.1:1/secret"}, 400, "invalid_input"),
        ({}, {"url": "file:///etc/passwd"}, 400, "invalid_input"),
        ({"file": ("a.txt", b"hello", "text/plain")}, {"url": "http://example.com"}, 400, None),
        ({"file": ("a.txt", b"hi there", "text/plain")}, {"metadata": "{not json"}, 400, None),
        (
            {"file": ("a.txt", b"hi there", "text/plain")},
            {"metadata": '{"a": ' * 5000 + "1" + "}" * 5000},
            400,
            "invalid_input",
        ),
        (
            {"file": ("a.txt", b"hi there", "text/plain")},
            {"tags": "[" * 50_000 + "]" * 50_000},
            400,
            "invalid_input",
        ),
        ({"file": ("a.txt", b"hi there", "text/plain")}, {"kb_name": "nope"}, 404, "not_found"),
    ],
)
def test_bad_uploads_are_refused_clearly(
    client: httpx.Client,
    solar: dict[str, str],
    files: dict[str, tuple[str, bytes, str]],
    data: dict[str, str],
    status: int,
    code: str | None,
) -> None:
    answer = client.post("/ingest", data={"kb_name": "energy", **data}, files=files or None)
    assert answer.status_code == status, answer.text
    if code:
        assert answer.json()["code"] == code
    if status == 202:  # accepted, then failed with a readable reason; retry is possible
        task = wait_for_task(client, answer.json()["job_id"])
        assert task["status"] == "failed" and "encrypted" in task["error"]
        retried = client.post(f"/tasks/{task['job_id']}/retry")
        assert retried.status_code == 202
        assert wait_for_task(client, task["job_id"])["attempts"] == 2


def test_upload_mistakes_of_the_form_itself_say_what_to_change(client: httpx.Client) -> None:
    """They said "Expected UploadFile, received: <class 'str'>" and "Invalid multipart data."."""
    as_text = client.post("/ingest", data={"kb_name": "energy", "file": "just text"})
    assert as_text.status_code == 422
    assert as_text.json()["message"] == (
        "file: must be a file part (multipart, with a filename), not a text field"
    )
    long_name = {"file": ("a" * 5000 + ".txt", b"hello", "text/plain")}
    refused = client.post("/ingest", data={"kb_name": "energy"}, files=long_name)
    assert refused.status_code == 400
    assert "a part's header is over 4 KiB" in refused.json()["message"]


def test_a_json_body_to_ingest_is_told_the_route_takes_a_form(client: httpx.Client) -> None:
    """It was told "kb_name: Field required", although kb_name was in the JSON."""
    as_json = client.post("/ingest", json={"kb_name": "energy", "url": "https://example.com/a"})
    assert as_json.status_code == 415
    assert as_json.json()["code"] == "unsupported_media_type"
    assert "multipart/form-data" in as_json.json()["message"]
    bare = client.post("/ingest", content=b"kb_name=energy")
    assert bare.status_code == 415


def test_task_stream_reports_progress_until_done(
    server: RunningServer, client: httpx.Client, solar: dict[str, str]
) -> None:
    submission = client.post(
        "/ingest",
        data={"kb_name": "energy"},
        files={"file": ("garden.md", GARDEN.encode(), "text/markdown")},
    ).json()
    with client.stream("GET", f"/tasks/{submission['job_id']}/stream") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(response))
    names = [name for name, _ in events]
    assert names[0] == "progress" and names[-1] == "done"
    final = json.loads(events[-1][1])
    assert final["status"] == "completed" and final["progress"]["current"] > 0
    assert {json.loads(data)["filename"] for _, data in events} == {"garden.md"}  # as GET says
    assert client.post(f"/tasks/{submission['job_id']}/retry").status_code == 409
    retry = client.get("/openapi.json").json()["paths"]["/tasks/{job_id}/retry"]["post"]
    assert "409" in retry["responses"]


def test_task_stream_ends_with_an_error_event_on_an_unexpected_failure(
    server: RunningServer,
    client: httpx.Client,
    solar: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks = server.eagle.repositories.tasks
    read = tasks.get

    def get(job_id: str, **kwargs: Any) -> Any:
        if not kwargs:  # the stream's polling read (the route's first read names the KBs)
            raise KeyError("lease_owner")
        return read(job_id, **kwargs)

    monkeypatch.setattr(tasks, "get", get)
    with client.stream("GET", f"/tasks/{solar['job_id']}/stream") as response:
        events = list(sse_events(response))
    assert [name for name, _ in events] == ["error"]
    assert json.loads(events[0][1])["code"] == "internal_error"


def test_delete_document_then_it_is_gone_everywhere(client: httpx.Client) -> None:
    client.post("/knowledge_bases", json={"kb_name": "gone"})
    submission = client.post(
        "/ingest",
        data={"kb_name": "gone"},
        files={"file": ("kiwi.md", b"# Kiwi\n\nKiwi orchard notes.", "text/markdown")},
    ).json()
    wait_for_task(client, submission["job_id"])
    found = client.post("/search", json={"query": "kiwi orchard", "kb_name": "gone"}).json()
    assert found["sources"]["text"]
    assert client.delete(f"/documents/{submission['document_id']}").json()["deleted"]
    assert client.get(f"/documents/{submission['document_id']}").status_code == 404
    again = client.post("/search", json={"query": "kiwi orchard", "kb_name": "gone"}).json()
    assert again["sources"]["text"] == []


def test_rebuild_runs_every_document_again(client: httpx.Client, solar: dict[str, str]) -> None:
    before = client.get(f"/documents/{solar['document_id']}").json()["chunk_count"]
    jobs = client.post("/knowledge_bases/energy/rebuild")
    assert jobs.status_code == 202
    for job in jobs.json():
        wait_for_task(client, job["job_id"])
    after = client.get(f"/documents/{solar['document_id']}").json()
    assert after["status"] == "completed" and after["chunk_count"] == before


def test_rebuild_leaves_a_document_whose_original_is_lost_searchable(
    server: RunningServer, client: httpx.Client
) -> None:
    """Its vectors were deleted before its task failed ("object not found"): a rebuild
    destroyed a document that could still be searched."""
    client.post("/knowledge_bases", json={"kb_name": "lost"})
    kept, lost = (
        client.post(
            "/ingest",
            data={"kb_name": "lost"},
            files={"file": (name, text.encode(), "text/markdown")},
        ).json()
        for name, text in (
            ("kept.md", "# Kept\n\nThe heron nests by the weir."),
            ("lost.md", "# Lost\n\nThe axolotl filter is rinsed weekly."),
        )
    )
    for job in (kept, lost):
        wait_for_task(client, job["job_id"])
    key = server.eagle.repositories.documents.get(lost["document_id"]).object_key
    assert key is not None
    server.eagle.objects.delete(key)
    jobs = client.post("/knowledge_bases/lost/rebuild").json()
    assert [j["document_id"] for j in jobs] == [kept["document_id"]]
    wait_for_task(client, jobs[0]["job_id"])
    assert client.get(f"/documents/{lost['document_id']}").json()["status"] == "completed"
    found = client.post("/search", json={"query": "axolotl filter", "kb_name": "lost"}).json()
    assert [s["document_id"] for s in found["sources"]["text"]][:1] == [lost["document_id"]]


def test_unknown_ids_are_404(client: httpx.Client) -> None:
    for path in (
        "/documents/nope",
        "/tasks/nope",
        "/documents/nope/chunks",
        "/sessions/x/messages",
    ):
        answer = client.get(path)
        assert answer.status_code == 404 and answer.json()["code"] == "not_found"
    assert client.get("/no/such/route").status_code == 404


def test_paging_beyond_any_catalog_is_a_clear_422(client: httpx.Client) -> None:
    # Schemathesis found offsets past 2**63 overflowing the database (a 500).
    for path in ("/knowledge_bases", "/documents"):
        response = client.get(path, params={"offset": 87707679727087194466156544})
        assert response.status_code == 422, (path, response.text)
        assert response.json()["code"] == "invalid_request"


def test_a_blank_query_names_the_field_the_client_sent(client: httpx.Client) -> None:
    """The request field is `query` on every surface; the error named the internal `text`.
    A query of spaces is refused as "" is (it was a 400 from the search, "" a 422)."""
    for path in ("/search", "/query", "/search/stream", "/query/stream"):
        answers = [client.post(path, json={"query": query}) for query in ("", "   ")]
        for response in answers:
            assert response.status_code == 422, (path, response.text)
            assert response.json()["code"] == "invalid_request"
            [problem] = response.json()["details"]["errors"]
            assert problem["field"] == "query", problem
        assert "blank" in answers[1].json()["message"]
    blank = client.post("/documents/any/pages/search", json={"query": "  "})
    assert blank.status_code == 422 and "blank" in blank.json()["message"]


def test_listing_documents_of_an_unknown_kb_or_status_is_refused(client: httpx.Client) -> None:
    """Both answered 200 [] before, which reads as an empty KB."""
    unknown = client.get("/documents", params={"kb_name": "no-such-kb"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    bogus = client.get("/documents", params={"status": "bogus"})
    assert bogus.status_code == 422, bogus.text
    assert client.get("/documents", params={"status": "completed"}).status_code == 200


def test_listing_tasks_of_an_unknown_kb_or_status_is_refused(client: httpx.Client) -> None:
    """As for documents: both answered 200 [], which reads as "no such tasks"."""
    unknown = client.get("/tasks", params={"kb_name": "no-such-kb"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    bogus = client.get("/tasks", params={"status": "done"})
    assert (
        bogus.status_code == 422 and bogus.json()["details"]["errors"][0]["field"] == "query.status"
    )
    assert client.get("/tasks", params={"status": "completed"}).status_code == 200


def test_a_body_that_is_not_json_is_told_so(client: httpx.Client) -> None:
    """It read 'field "0": JSON decode error', naming a field "0" (the character position);
    and it was a 422, where api.md promises 400 for a body that cannot be parsed."""
    headers = {"content-type": "application/json"}
    for path in ("/search", "/query", "/knowledge_bases"):
        response = client.post(path, content=b"{query: inverter", headers=headers)
        assert response.status_code == 400, path
        body = response.json()
        assert body["code"] == "invalid_request"
        assert body["message"].startswith("request: the body is not valid JSON (")
        assert body["details"]["errors"][0]["field"] == ""
    assert client.post("/search", json={"query": 3}).status_code == 422  # parsed, wrong shape


def test_tasks_name_their_file_and_page(client: httpx.Client, solar: dict[str, str]) -> None:
    """A task listed only its job and document ids, and ?offset= was silently ignored."""
    extra = client.post(
        "/ingest",
        data={"kb_name": "energy"},
        files={"file": ("wind.md", b"# Wind\n\nTurbines turn.", "text/markdown")},
    )
    wait_for_task(client, extra.json()["job_id"])
    listed = client.get("/tasks", params={"kb_name": "energy"}).json()
    assert listed[0]["filename"] == "wind.md" and "solar.md" in {t["filename"] for t in listed}
    pages = [
        client.get("/tasks", params={"kb_name": "energy", "limit": 1, "offset": n}).json()
        for n in range(len(listed))
    ]
    assert [t["job_id"] for page in pages for t in page] == [t["job_id"] for t in listed]
    assert client.get(f"/tasks/{listed[0]['job_id']}").json()["filename"] == "wind.md"
    beyond = client.get("/tasks", params={"offset": 87707679727087194466156544})
    assert beyond.status_code == 422


def test_an_upload_past_the_file_limit_is_told_in_mib_naming_the_setting(
    client: httpx.Client, server: RunningServer
) -> None:
    """Refused by its length before it is read: the message speaks of the file, not the body."""
    limit = server.settings.ingest.max_file_bytes
    big = b"a" * (limit + 2 * 1024 * 1024)
    answer = client.post("/ingest", data={"kb_name": "x"}, files={"file": ("big.txt", big)})
    assert answer.status_code == 413 and answer.json()["code"] == "payload_too_large"
    mib = f"{round(limit / 2**20, 1):g}"
    expected = f"the file is larger than the {mib} MiB limit (ingest.max_file_bytes)"
    assert answer.json()["message"] == expected


def test_tags_with_combining_marks_and_decomposed_text_meet_their_composed_form(
    client: httpx.Client,
) -> None:
    """ "हिन्दी" (vowel signs are combining marks) and "café" typed decomposed (macOS) were refused
    as tags; metadata typed decomposed was stored so, and a filter typed composed missed it."""
    decomposed = unicodedata.normalize("NFD", "café")
    assert client.post("/knowledge_bases", json={"kb_name": "unicode-forms"}).status_code == 201
    answer = client.post(
        "/ingest",
        data={
            "kb_name": "unicode-forms",
            "tags": json.dumps(["हिन्दी", decomposed]),
            "metadata": json.dumps({"city": unicodedata.normalize("NFD", "Zürich")}),
        },
        files={"file": ("menu.txt", b"Menu of the cafe: espresso and croissant.", "text/plain")},
    )
    assert answer.status_code == 202, answer.text
    assert wait_for_task(client, answer.json()["job_id"])["status"] == "completed"
    document = client.get(f"/documents/{answer.json()['document_id']}").json()
    assert sorted(document["tags"]) == sorted(["हिन्दी", "café"])
    assert document["metadata"] == {"city": "Zürich"}
    for filters, tags in [({"metadata": {"city": "Zürich"}}, None), ({}, [decomposed])]:
        body = {"query": "espresso", "kb_name": "unicode-forms", "filters": filters}
        found = client.post("/search", json={**body, "tags": tags} if tags else body).json()
        assert [s["filename"] for s in found["sources"]["text"]][:1] == ["menu.txt"], filters
    decomposed_filter = {"metadata": {"city": unicodedata.normalize("NFD", "Zürich")}}
    found = client.post(
        "/search",
        json={"query": "espresso", "kb_name": "unicode-forms", "filters": decomposed_filter},
    ).json()
    assert found["sources"]["text"]
