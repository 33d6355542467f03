"""Local servers speaking RAGFlow's and FastGPT's request and response shapes, over the same
three segments as the Dify fake, scored by real word overlap."""

from __future__ import annotations

from typing import Any

from tests.engines.dify_fake import DATASET, KEY, SEGMENTS, overlap
from tests.http_fakes import json_answer


def _ranked(query: str, limit: int) -> list[tuple[float, str, str, str]]:
    scored = sorted(
        ((overlap(query, text), sid, doc, text) for sid, doc, text in SEGMENTS), reverse=True
    )
    return [s for s in scored[:limit] if s[0] > 0]


def ragflow(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    if headers.get("authorization") != f"Bearer {KEY}":  # RAGFlow: HTTP 200, error in the body
        return json_answer(
            200, {"code": 109, "message": "Authentication error: API key is invalid!"}
        )
    documents = f"/api/v1/datasets/{DATASET}/documents"
    if path == "/api/v1/retrieval":
        assert body["dataset_ids"] == [DATASET]
        chunks = [
            {
                "id": sid,
                "content": text,
                "document_id": doc,
                "document_keyword": f"{doc}.pdf",
                "similarity": score,
                "vector_similarity": score,
                "term_similarity": score,
            }
            for score, sid, doc, text in _ranked(body["question"], body["page_size"])
        ]
        return json_answer(
            200, {"code": 0, "data": {"chunks": chunks, "doc_aggs": [], "total": len(chunks)}}
        )
    if path == documents and headers[":method"] == "POST":
        assert b'name="file"' in body.get("_raw", b"")
        return json_answer(200, {"code": 0, "data": [{"id": "rf-doc-1", "name": "x"}]})
    if path == f"/api/v1/datasets/{DATASET}/chunks":
        assert body == {"document_ids": ["rf-doc-1"]}
        return json_answer(200, {"code": 0})
    if path == documents and headers[":method"] == "DELETE":
        return json_answer(200, {"code": 0})
    return json_answer(200, {"code": 102, "message": f"unknown {path}"})


def fastgpt(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    if headers.get("authorization") != f"Bearer {KEY}":
        return json_answer(
            401, {"code": 401, "statusText": "unAuthorization", "message": "unAuthorization"}
        )
    if path == "/api/core/dataset/searchTest":
        assert body["datasetId"] == DATASET
        found = [
            {
                "id": sid,
                "q": text,
                "a": "",
                "datasetId": DATASET,
                "collectionId": doc,
                "sourceName": f"{doc}.docx",
                "sourceId": doc,
                "score": _fastgpt_scores(body.get("searchMode"), score, rank),
            }
            for rank, (score, sid, doc, text) in enumerate(_ranked(body["text"], 10))
        ]
        return json_answer(200, {"code": 200, "statusText": "", "data": {"list": found}})
    if path == "/api/core/dataset/collection/create/localFile":
        assert b'name="file"' in body.get("_raw", b"")
        return json_answer(200, {"code": 200, "data": {"collectionId": "fg-col-1"}})
    if (
        path.startswith("/api/core/dataset/collection/delete?id=")
        and headers[":method"] == "DELETE"
    ):
        return json_answer(200, {"code": 200, "data": None})
    return json_answer(200, {"code": 500, "message": f"unknown {path}"})


def _fastgpt_scores(mode: Any, overlap_share: float, rank: int) -> list[dict[str, Any]]:
    """FastGPT's score list for one match: an embedding similarity in [0, 1], a full-text score
    with no upper bound (BM25-like: several units for a good match) and the rrf value of mixed
    recall, each present only in the modes that produce it."""
    embedding = {"type": "embedding", "value": round(0.9 * overlap_share, 4), "index": rank}
    full_text = {"type": "fullText", "value": round(12.0 * overlap_share, 4), "index": rank}
    if mode == "embedding":
        return [embedding]
    if mode == "fullTextRecall":
        return [full_text]
    rrf = {"type": "rrf", "value": round(2 / (60 + rank + 1), 4), "index": rank}
    return [embedding, full_text, rrf]
