"""The RAGFlow and FastGPT bridges through a real server: create (checked remotely), search
fused with a native KB, ingest and delete forwarded, a wrong key refused, a broken remote
costing only its hits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.engines.bridge_fakes import fastgpt, ragflow
from tests.engines.dify_fake import DATASET, KEY, dify
from tests.http_fakes import json_answer, serve
from tests.retrieval.conftest import SOLAR

BRIDGES = {
    "ragflow": (ragflow, "rf-doc-1", "/api/v1/datasets/ds-1/documents"),
    "fastgpt": (fastgpt, "fg-col-1", "/api/core/dataset/collection/delete?id=fg-col-1"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("bridges")) as running:
        client = running.client()
        client.post("/knowledge_bases", json={"kb_name": "local"})
        job = client.post(
            "/ingest", data={"kb_name": "local"}, files={"file": ("solar.md", SOLAR.encode())}
        ).json()
        wait_for_task(client, job["job_id"])
        yield running


def create(client: httpx.Client, name: str, engine: str, url: str, key: str = KEY) -> Any:
    return client.post(
        "/knowledge_bases",
        json={
            "kb_name": name,
            "engine": engine,
            "creation_settings": {"base_url": url, "api_key": key, "dataset_id": DATASET},
        },
    )


@pytest.mark.parametrize("engine", sorted(BRIDGES))
def test_a_bridge_end_to_end(server: RunningServer, engine: str) -> None:
    fake, remote_id, delete_path = BRIDGES[engine]
    client = server.client()
    with serve(fake) as (url, recorded):
        refused = create(client, f"{engine}-bad", engine, url, key="wrong")
        assert refused.status_code == 502 and refused.json()["code"] == "upstream_error"
        assert create(client, engine, engine, url).status_code == 201

        body = client.post(
            "/search", json={"query": "solar battery inverter", "kb_names": ["local", engine]}
        ).json()
        collections = {s["collection"] for s in body["sources"]["text"]}
        assert collections == {"eagle_text", engine}
        bridged = next(s for s in body["sources"]["text"] if s["collection"] == engine)
        assert bridged["kb_name"] == engine and f"{engine}_rank" in bridged["scores"]

        job = client.post(
            "/ingest", data={"kb_name": engine}, files={"file": ("note.txt", b"hello bridge")}
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "completed"
        document = client.get(f"/documents/{job['document_id']}").json()
        assert document["metadata"]["remote_document_id"] == remote_id
        assert client.delete(f"/documents/{job['document_id']}").status_code == 200
    deletes = [r for r in recorded.requests if r[2][":method"] == "DELETE"]
    assert deletes and deletes[-1][0] == delete_path


@pytest.mark.parametrize("engine", sorted(BRIDGES))
@pytest.mark.parametrize(
    "reply",
    [
        lambda: json_answer(200, {"unexpected": True}),
        lambda: json_answer(200, {"code": 0, "data": {"chunks": "nope", "list": "nope"}}),
        lambda: json_answer(503, {"message": "down"}),
    ],
)
def test_a_broken_bridge_degrades(server: RunningServer, engine: str, reply: Any) -> None:
    client = server.client()
    name = f"{engine}-broken-{uuid.uuid4().hex[:6]}"
    with serve(lambda *_: reply()) as (url, _):
        # Stored directly: creation through the API would (rightly) refuse a broken remote.
        server.eagle.repositories.knowledge_bases.create(
            name,
            engine=engine,
            creation_settings={"base_url": url, "api_key": KEY, "dataset_id": DATASET},
        )
        body = client.post(
            "/search", json={"query": "inverter", "kb_names": ["local", name]}
        ).json()
    assert {s["collection"] for s in body["sources"]["text"]} == {"eagle_text"}
    step = next(s for s in body["steps"] if s["name"] == f"{name}:{engine}")
    assert step["status"] == "warning"


def test_engines_lists_all_bridges(server: RunningServer) -> None:
    names = {e["name"] for e in server.client().get("/engines").json()}
    assert {"eagle", "dify", "ragflow", "fastgpt"} <= names


@pytest.mark.parametrize(
    ("search_mode", "best"), [("mixedRecall", 0.9), ("embedding", 0.9), ("fullTextRecall", 0.0)]
)
def test_fastgpt_relevance_is_its_similarity_never_its_full_text_score(
    server: RunningServer, search_mode: str, best: float
) -> None:
    client = server.client()
    name = f"fg-score-{search_mode.lower()}"
    with serve(fastgpt) as (url, _):
        assert create(client, name, "fastgpt", url).status_code == 201
        body = client.post(
            "/search",
            json={
                "query": "solar battery",  # seg-1 matches both words: full text 12.0, cosine 0.9
                "kb_name": name,
                "retrieval_settings": {name: {"search_mode": search_mode}},
            },
        ).json()
        strict = {"knowledge_id": name, "query": "solar battery"}
        dify = client.post(
            "/retrieval",
            json={**strict, "retrieval_setting": {"top_k": 5, "score_threshold": 0.95}},
        ).json()
    top = body["sources"]["text"][0]
    assert top["score"] == best and top["metadata"]["fastgpt_scores"]
    assert all(0.0 <= s["score"] <= best for s in body["sources"]["text"])
    assert dify["records"] == []  # nothing reaches 0.95: 12.0 is not a relevance of 1


@pytest.mark.parametrize("engine", ["dify", "ragflow", "fastgpt"])
@pytest.mark.parametrize("dataset_id", ["../../x", "ds-1/../../x", "ds 1", "..", "ds-1?x=1"])
def test_a_dataset_id_that_is_not_one_path_segment_is_refused(
    server: RunningServer, engine: str, dataset_id: str
) -> None:
    fake = {"dify": dify, "ragflow": ragflow, "fastgpt": fastgpt}[engine]
    with serve(fake) as (url, recorded):
        answer = server.client().post(
            "/knowledge_bases",
            json={
                "kb_name": f"{engine}-path",
                "engine": engine,
                "creation_settings": {"base_url": url, "api_key": KEY, "dataset_id": dataset_id},
            },
        )
    assert answer.status_code == 400 and answer.json()["code"] == "invalid_input"
    assert "dataset_id" in answer.json()["message"]
    assert recorded.requests == []  # refused before the service is called


@pytest.mark.parametrize(
    ("engine", "sent"),
    [
        ("dify", "/v1/datasets/..%2F..%2Fx/retrieve"),
        ("ragflow", "/api/v1/datasets/..%2F..%2Fx/documents"),
    ],
)
def test_a_stored_dataset_id_stays_one_path_segment(
    server: RunningServer, engine: str, sent: str
) -> None:
    """A KB stored before dataset ids were checked: its id is escaped, never a path."""
    client = server.client()
    name = f"{engine}-old-{uuid.uuid4().hex[:6]}"
    with serve(lambda *_: json_answer(404, {"code": 404, "message": "no such dataset"})) as (
        url,
        recorded,
    ):
        server.eagle.repositories.knowledge_bases.create(
            name,
            engine=engine,
            creation_settings={"base_url": url, "api_key": KEY, "dataset_id": "../../x"},
        )
        client.post("/search", json={"query": "inverter", "kb_name": name})
        job = client.post(
            "/ingest", data={"kb_name": name}, files={"file": ("a.txt", b"hello")}
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "failed"  # the fake's 404
    paths = [r[0] for r in recorded.requests]
    assert sent in paths and not any(p.startswith("/x") for p in paths)


@pytest.mark.parametrize(
    ("engine", "odd"), [("dify", "\n"), ("ragflow", "\r\n"), ("fastgpt", "\u200b")]
)
def test_an_api_key_pasted_with_its_newline_is_refused_without_quoting_it(
    server: RunningServer, engine: str, odd: str
) -> None:
    """It was a 503 "unreachable: Illegal header value b'Bearer sk-…\\n'": the key quoted in
    the message, and Retry-After telling the caller to wait for an outage that was not one."""
    fake = {"dify": dify, "ragflow": ragflow, "fastgpt": fastgpt}[engine]
    client = server.client()
    with serve(fake) as (url, recorded):
        settings = {"base_url": url, "api_key": KEY + odd, "dataset_id": DATASET}
        answer = client.post(
            "/knowledge_bases",
            json={"kb_name": f"{engine}-newline", "engine": engine, "creation_settings": settings},
        )
        assert answer.status_code == 400 and "api_key holds a line break" in answer.text, (
            answer.text
        )
        assert KEY not in answer.text and recorded.requests == []
        # One stored before keys were checked: a 400 naming the key, not an outage.
        name = f"{engine}-old-key-{uuid.uuid4().hex[:6]}"
        server.eagle.repositories.knowledge_bases.create(
            name, engine=engine, creation_settings=settings
        )
        found = client.post("/search", json={"query": "inverter", "kb_name": name}).json()
    [step] = [s for s in found["steps"] if s["name"] == f"{name}:{engine}"]
    assert step["status"] == "warning" and "holds a character HTTP does not allow" in step["detail"]
    assert KEY not in step["detail"]
