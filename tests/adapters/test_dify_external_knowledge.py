"""Dify's External Knowledge API, with requests shaped as Dify sends them (its
ExternalDatasetService: JSON body, ``Authorization: Bearer``, ``score_threshold`` 0.0 when the
threshold is disabled, ``metadata_condition`` null unless set)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.adapters.conftest import KEY, SCOPED_KEY
from tests.api.server import RunningServer


def dify_request(
    server: RunningServer,
    knowledge_id: str,
    query: str,
    *,
    key: str | None = KEY,
    top_k: int = 3,
    score_threshold: float = 0.0,
    metadata_condition: dict[str, Any] | None = None,
    authorization: str | None = None,
) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    elif key is not None:
        headers["Authorization"] = f"Bearer {key}"
    body = {
        "retrieval_setting": {"top_k": top_k, "score_threshold": score_threshold},
        "query": query,
        "knowledge_id": knowledge_id,
        "metadata_condition": metadata_condition,
    }
    return httpx.post(server.url + "/retrieval", json=body, headers=headers, timeout=60)


def test_records_with_scores_titles_and_metadata(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    answer = dify_request(server, "energy", "How is the inverter connected?")
    assert answer.status_code == 200, answer.text
    records = answer.json()["records"]
    assert 1 <= len(records) <= 3
    top = records[0]
    assert "copper cables" in top["content"] and top["title"] == "solar.md"
    assert top["metadata"]["path"] == "Solar Guide/Installation/Wiring"
    assert top["metadata"]["document_id"] == corpus["solar.md"]
    assert top["metadata"]["year"] == 2021  # the document's own metadata
    scores = [r["score"] for r in records]
    assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)

    strict = dify_request(server, "energy", "How is the inverter connected?", score_threshold=0.5)
    assert all(r["score"] >= 0.5 for r in strict.json()["records"])
    assert len(strict.json()["records"]) < len(records)
    nothing = dify_request(server, "energy", "inverter", score_threshold=1.0, top_k=1)
    assert nothing.status_code == 200 and len(nothing.json()["records"]) <= 1


def test_metadata_conditions(server: RunningServer, corpus: dict[str, str]) -> None:
    def titles(condition: dict[str, Any]) -> set[str]:
        answer = dify_request(
            server,
            "energy",
            "scope of the audit and wiring",
            top_k=10,
            metadata_condition=condition,
        )
        assert answer.status_code == 200, answer.text
        return {r["title"] for r in answer.json()["records"]}

    year = {"name": "year", "comparison_operator": "=", "value": 2023}
    team = {"name": "team", "comparison_operator": "is", "value": "ops"}
    assert titles({"logical_operator": "and", "conditions": [year]}) == {"report.pdf"}
    assert titles({"logical_operator": "and", "conditions": [team]}) == {"solar.md"}
    assert titles({"logical_operator": "and", "conditions": [year, team]}) == set()
    assert titles({"logical_operator": "or", "conditions": [year, team]}) == {
        "report.pdf",
        "solar.md",
    }
    later = {"name": "year", "comparison_operator": "≥", "value": "2022"}
    assert titles({"conditions": [later]}) == {"report.pdf"}
    not_ops = {"name": "team", "comparison_operator": "not in", "value": ["ops"]}
    assert titles({"conditions": [not_ops]}) == {"report.pdf"}
    empty = {"name": "team", "comparison_operator": "empty"}
    assert titles({"conditions": [empty]}) == {"report.pdf"}
    assert titles({"logical_operator": "and", "conditions": None}) == {"solar.md", "report.pdf"}


def test_before_and_after_read_a_year_as_a_year(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    """``year`` 2023 was read as a Unix timestamp (1970-01-01 00:33:43): before every date,
    after none. A year is all of it: after a date within it, not before its first day."""

    def titles(operator: str, value: str | int) -> set[str]:
        condition = {
            "conditions": [{"name": "year", "comparison_operator": operator, "value": value}]
        }
        answer = dify_request(
            server,
            "energy",
            "scope of the audit and wiring",
            top_k=10,
            metadata_condition=condition,
        )
        assert answer.status_code == 200, answer.text
        return {r["title"] for r in answer.json()["records"]}

    both = {"solar.md", "report.pdf"}  # years 2021 and 2023
    assert titles("after", "2023-06-30") == {"report.pdf"}
    assert titles("after", "2021-06-30") == both
    assert titles("after", 2022) == {"report.pdf"}
    assert titles("after", "2024-01-01") == set()
    assert titles("before", "2023-01-01") == {"solar.md"}
    assert titles("before", "2024-01-01") == both
    assert titles("before", 2021) == set()
    # Not years and not instants: they match nothing (int("²") and a 5,000-digit year raised).
    for value in ("²", "9" * 5000, 10**20):
        assert titles("before", value) == set() and titles("after", value) == set()


def test_a_null_logical_operator_means_and(server: RunningServer, corpus: dict[str, str]) -> None:
    year = {"name": "year", "comparison_operator": "=", "value": 2023}
    team = {"name": "team", "comparison_operator": "is", "value": "ops"}
    for conditions, titles in (([year], {"report.pdf"}), ([year, team], set())):
        condition = {"logical_operator": None, "conditions": conditions}
        answer = dify_request(
            server, "energy", "audit wiring", top_k=10, metadata_condition=condition
        )
        assert answer.status_code == 200, answer.text
        assert {r["title"] for r in answer.json()["records"]} == titles


def test_conditions_test_the_metadata_each_record_shows(
    server: RunningServer, corpus: dict[str, str]
) -> None:
    def records(*conditions: dict[str, Any]) -> list[dict[str, Any]]:
        condition = {"logical_operator": "and", "conditions": list(conditions)}
        query = "scope of the audit and wiring"
        answer = dify_request(server, "energy", query, top_k=10, metadata_condition=condition)
        assert answer.status_code == 200, answer.text
        return [r["metadata"] for r in answer.json()["records"]]

    every = records()
    first = every[0]
    solar = corpus["solar.md"]
    assert len({m["document_id"] for m in every}) == 2  # both documents, so a filter shows
    assert records({"name": "type", "comparison_operator": "is", "value": "text"}) == every
    assert records({"name": "kb_name", "comparison_operator": "is", "value": "energy"}) == every
    same = records({"name": "document_id", "comparison_operator": "is", "value": solar})
    assert same and all(m["document_id"] == solar for m in same)
    other = records({"name": "document_id", "comparison_operator": "is not", "value": solar})
    assert other and all(m["document_id"] != solar for m in other)
    assert len(same) + len(other) == len(every)
    prefix = {"name": "path", "comparison_operator": "start with", "value": first["path"][:5]}
    assert first in records(prefix)
    chunk = {"name": "chunk_id", "comparison_operator": "is", "value": first["chunk_id"]}
    assert records(chunk) == [first]


def test_dify_error_codes(server: RunningServer, corpus: dict[str, str]) -> None:
    def error(response: httpx.Response) -> tuple[int, int]:
        body = response.json()
        assert set(body) == {"error_code", "error_msg"} and body["error_msg"]
        return response.status_code, body["error_code"]

    assert error(dify_request(server, "energy", "x", key=None)) == (403, 1001)
    assert error(dify_request(server, "energy", "x", authorization="Token abc")) == (403, 1001)
    assert error(dify_request(server, "energy", "x", authorization="Bearer")) == (403, 1001)
    assert error(dify_request(server, "energy", "x", key="wrong")) == (403, 1002)
    assert error(dify_request(server, "energy", "x", key=SCOPED_KEY)) == (403, 1002)
    missing = dify_request(server, "no-such-kb", "x")
    assert error(missing) == (404, 2001)
    assert missing.json()["error_msg"] == "The knowledge does not exist."
    assert error(dify_request(server, "Bad Name!", "x")) == (404, 2001)
    assert error(dify_request(server, "energy", "x", top_k=0)) == (400, 3001)
    bad_operator = {"conditions": [{"name": "year", "comparison_operator": "like"}]}
    assert error(dify_request(server, "energy", "x", metadata_condition=bad_operator)) == (
        400,
        3001,
    )
    # A scoped key learns nothing about KBs outside it: existing, missing or malformed alike.
    outside = [dify_request(server, kb, "x", key=SCOPED_KEY) for kb in ("energy", "nope", "Bad!")]
    assert {error(r) for r in outside} == {(403, 1002)}
    assert len({r.text for r in outside}) == 1
    garden = dify_request(server, "garden", "tomatoes", key=SCOPED_KEY)
    assert garden.status_code == 200 and garden.json()["records"][0]["title"] == "garden.md"
