"""Engines over REST: the catalog, KB creation against schemas, a Dify bridge, mixed queries."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.server import RunningServer, running_server, wait_for_task
from tests.engines.dify_fake import DATASET, KEY, RETRIEVAL_MODEL_FIELDS, dify
from tests.http_fakes import Recorded, json_answer, serve
from tests.retrieval.conftest import SOLAR


@pytest.fixture(scope="module")
def dify_server() -> Iterator[tuple[str, Recorded]]:
    with serve(dify) as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("engines")) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: RunningServer, dify_server: tuple[str, Recorded]) -> httpx.Client:
    client = server.client()
    url, _ = dify_server
    client.post("/knowledge_bases", json={"kb_name": "local"})
    job = client.post(
        "/ingest", data={"kb_name": "local"}, files={"file": ("solar.md", SOLAR.encode())}
    ).json()
    wait_for_task(client, job["job_id"])
    created = client.post(
        "/knowledge_bases",
        json={
            "kb_name": "remote",
            "engine": "dify",
            "creation_settings": {"base_url": url, "api_key": KEY, "dataset_id": DATASET},
            "retrieval_settings": {"search_method": "semantic_search"},
        },
    )
    assert created.status_code == 201, created.text
    return client


def test_engines_are_listed_with_their_schemas(client: httpx.Client) -> None:
    engines = {e["name"]: e for e in client.get("/engines").json()}
    assert {"eagle", "dify"} <= set(engines)
    dify_schema = {item["name"]: item for item in engines["dify"]["creation_schema"]}
    assert dify_schema["api_key"]["type"] == "secret" and dify_schema["api_key"]["required"]
    assert engines["dify"]["capabilities"] == ["doc_ingestion", "doc_parsing"]
    eagle = {item["name"]: item for item in engines["eagle"]["creation_schema"]}
    assert eagle["chunk_size"]["default"] == 48  # the instance's setting


def test_secrets_are_never_echoed(client: httpx.Client) -> None:
    remote = client.get("/knowledge_bases/remote").json()
    assert remote["engine"] == "dify"
    assert remote["creation_settings"]["api_key"] == "********"
    assert remote["retrieval_settings"] == {
        "search_method": "semantic_search",
        "score_threshold": 0.0,
    }
    assert KEY not in client.get("/knowledge_bases").text


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"engine": "nope"}, 400, "unknown engine 'nope'"),
        ({"engine": "dify", "creation_settings": {"dataset_id": "x"}}, 400, "api_key is required"),
        ({"creation_settings": {"chunk_size": "big"}}, 400, "chunk_size must be an integer"),
        ({"creation_settings": {"chunk_size": 64, "chunk_overlap": 40}}, 400, "half of chunk_size"),
        ({"creation_settings": {"colour": 1}}, 400, "unknown field 'colour'"),
        ({"retrieval_settings": {"mode": "fuzzy"}}, 400, "unknown field 'mode'"),
    ],
)
def test_settings_are_checked_against_the_schema(
    client: httpx.Client, body: dict[str, Any], status: int, message: str
) -> None:
    answer = client.post("/knowledge_bases", json={"kb_name": "bad", **body})
    assert answer.status_code == status and message in answer.json()["message"]
    assert client.get("/knowledge_bases/bad").status_code == 404


def test_a_bridge_with_a_wrong_key_is_refused_at_creation(
    client: httpx.Client, dify_server: tuple[str, Recorded]
) -> None:
    url, _ = dify_server
    answer = client.post(
        "/knowledge_bases",
        json={
            "kb_name": "wrong",
            "engine": "dify",
            "creation_settings": {"base_url": url, "api_key": "bad", "dataset_id": DATASET},
        },
    )
    assert answer.status_code == 502
    assert (
        answer.json()["code"] == "upstream_error"
        and "refused the API key" in answer.json()["message"]
    )


def test_a_dify_kb_is_created_against_a_strict_dify(
    client: httpx.Client, dify_server: tuple[str, Recorded]
) -> None:
    url, recorded = dify_server
    partial = httpx.post(
        f"{url}/v1/datasets/{DATASET}/retrieve",
        json={"query": "ping", "retrieval_model": {"top_k": 1}},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert partial.status_code == 400  # the fake refuses what Dify refuses
    created = client.post(
        "/knowledge_bases",
        json={
            "kb_name": "strict",
            "engine": "dify",
            "creation_settings": {"base_url": url, "api_key": KEY, "dataset_id": DATASET},
        },
    )
    assert created.status_code == 201, created.text
    ping = [r[1] for r in recorded.requests if r[0].endswith("/retrieve")][-1]
    assert set(RETRIEVAL_MODEL_FIELDS) <= set(ping["retrieval_model"])


def test_a_query_over_two_engines_fuses_both(client: httpx.Client) -> None:
    body = client.post(
        "/search",
        json={"query": "solar inverter battery", "kb_names": ["local", "remote"], "top_k": 8},
    ).json()
    collections = {s["collection"] for s in body["sources"]["text"]}
    assert collections == {"eagle_text", "dify"}
    remote = next(s for s in body["sources"]["text"] if s["collection"] == "dify")
    assert remote["kb_name"] == "remote" and remote["filename"].endswith(".txt")
    assert "remote_rank" in remote["scores"]
    assert any(s["name"] == "remote:dify" and s["status"] == "ok" for s in body["steps"])


def test_per_query_retrieval_settings_reach_the_bridge(
    client: httpx.Client, dify_server: tuple[str, Recorded]
) -> None:
    _, recorded = dify_server
    body = {
        "query": "battery",
        "kb_names": ["local", "remote"],
        "retrieval_settings": {"remote": {"score_threshold": 0.9}},
    }
    assert client.post("/search", json=body).status_code == 200
    sent = [r[1] for r in recorded.requests if r[0].endswith("/retrieve")][-1]
    assert sent["retrieval_model"]["score_threshold"] == 0.9
    assert sent["retrieval_model"]["search_method"] == "semantic_search"  # the KB's stored one


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"remote": {"search_method": "magic"}}, "retrieval_settings.remote: search_method"),
        ({"remote": {"score_threshold": 2}}, "score_threshold must be at most 1"),
        ({"local": {"mode": "dense"}}, "unknown field 'mode'"),
        ({"elsewhere": {}}, "not in the query's scope"),
    ],
)
def test_bad_retrieval_settings_are_400(
    client: httpx.Client, settings: dict[str, Any], message: str
) -> None:
    answer = client.post(
        "/search",
        json={"query": "x", "kb_names": ["local", "remote"], "retrieval_settings": settings},
    )
    assert answer.status_code == 400 and message in answer.json()["message"]


def test_ingest_into_a_bridge_and_delete_there(
    client: httpx.Client, dify_server: tuple[str, Recorded]
) -> None:
    _, recorded = dify_server
    job = client.post(
        "/ingest", data={"kb_name": "remote"}, files={"file": ("note.txt", b"hello dify")}
    ).json()
    task = wait_for_task(client, job["job_id"])
    assert task["status"] == "completed", task
    document = client.get(f"/documents/{job['document_id']}").json()
    assert document["metadata"]["remote_document_id"] == "remote-doc-9"
    assert client.delete(f"/documents/{job['document_id']}").json()["deleted"]
    deletes = [r for r in recorded.requests if r[2][":method"] == "DELETE"]
    assert deletes and deletes[-1][0] == f"/v1/datasets/{DATASET}/documents/remote-doc-9"


@pytest.mark.parametrize(
    "reply",
    [
        lambda: json_answer(200, {"records": [{"segment": {"id": "x"}}]}),  # malformed
        lambda: json_answer(500, {"message": "boom"}),
        lambda: (time.sleep(1.5), json_answer(200, {"records": []}))[1],  # too slow
    ],
)
def test_a_failing_bridge_costs_only_its_hits(
    tmp_path_factory: pytest.TempPathFactory, reply: Any
) -> None:
    with (
        serve(lambda *_: reply()) as (url, _),
        running_server(tmp_path_factory.mktemp("bridge-fail")) as running,
    ):
        engine = running.eagle.knowledge.engine("dify")
        engine._timeout = 1.0
        client = running.client()
        client.post("/knowledge_bases", json={"kb_name": "local"})
        job = client.post(
            "/ingest", data={"kb_name": "local"}, files={"file": ("solar.md", SOLAR.encode())}
        ).json()
        wait_for_task(client, job["job_id"])
        running.eagle.repositories.knowledge_bases.create(
            "remote",
            engine="dify",
            creation_settings={"base_url": url, "api_key": KEY, "dataset_id": DATASET},
        )
        body = client.post(
            "/search", json={"query": "inverter", "kb_names": ["local", "remote"]}
        ).json()
    assert body["sources"]["text"] and {s["collection"] for s in body["sources"]["text"]} == {
        "eagle_text"
    }
    step = next(s for s in body["steps"] if s["name"] == "remote:dify")
    assert step["status"] == "warning" and "engine failed" in step["detail"]


def test_a_filtered_search_leaves_a_bridged_kb_out_and_says_so(
    client: httpx.Client, dify_server: tuple[str, Recorded]
) -> None:
    """The engines take no filters: a bridged KB's hits came back unfiltered, with no word,
    while the built-in KB's were filtered (a year no document has: no hits)."""
    _, recorded = dify_server
    asked = len(recorded.requests)
    body = {"query": "battery", "kb_names": ["local", "remote"], "filters": {"year": 1990}}
    answer = client.post("/search", json=body).json()
    assert answer["sources"]["text"] == []
    [step] = [s for s in answer["steps"] if s["name"] == "remote:dify"]
    assert step["status"] == "warning" and "cannot apply filters (year)" in step["detail"]
    assert len(recorded.requests) == asked  # the engine was not asked
    unfiltered = client.post("/search", json={**body, "filters": {}}).json()
    assert any(s["kb_name"] == "remote" for s in unfiltered["sources"]["text"])
    local = client.get("/documents", params={"kb_name": "local"}).json()[0]["document_id"]
    scoped = client.post("/search", json={**body, "filters": {}, "document_ids": [local]})
    assert {s["kb_name"] for s in scoped.json()["sources"]["text"]} == {"local"}
    [step] = [s for s in scoped.json()["steps"] if s["name"] == "remote:dify"]
    assert step["detail"] == "left out: the dify engine cannot apply document_ids"
