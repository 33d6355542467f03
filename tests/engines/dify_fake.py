"""A local server speaking Dify's Knowledge API shapes (retrieve, create-by-file, delete),
with a real (lexical) relevance score so results depend on the query."""

from __future__ import annotations

import re
from typing import Any

from tests.http_fakes import json_answer

KEY = "dify-key"
DATASET = "ds-1"
SEGMENTS = [
    ("seg-1", "doc-a", "Battery storage keeps solar power for the night."),
    ("seg-2", "doc-a", "Grid tie inverters sync with the utility frequency."),
    ("seg-3", "doc-b", "Tomato plants need staking in summer."),
]


# Dify's RetrievalModel (api/services/entities/knowledge_entities): pydantic refuses a
# retrieval_model without these with a 400, and hit testing reads them by key.
RETRIEVAL_MODEL_FIELDS = {
    "search_method": str,
    "reranking_enable": bool,
    "top_k": int,
    "score_threshold_enabled": bool,
}
SEARCH_METHODS = ("semantic_search", "full_text_search", "hybrid_search", "keyword_search")


def overlap(query: str, text: str) -> float:
    words = set(re.findall(r"\w+", query.lower()))
    return len(words & set(re.findall(r"\w+", text.lower()))) / max(len(words), 1)


def dify(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    if headers.get("authorization") != f"Bearer {KEY}":
        return json_answer(401, {"code": "unauthorized", "message": "Access token is invalid"})
    base = f"/v1/datasets/{DATASET}"
    if headers[":method"] == "DELETE" and path.startswith(base + "/documents/"):
        return json_answer(200, {"result": "success"})
    if path == base + "/retrieve":
        refused = _invalid_retrieval_model(body.get("retrieval_model"))
        if refused:
            return json_answer(400, {"code": "invalid_param", "message": refused, "status": 400})
        top_k = (body.get("retrieval_model") or {}).get("top_k", 4)
        scored = sorted(
            ((overlap(body["query"], text), sid, doc, text) for sid, doc, text in SEGMENTS),
            reverse=True,
        )
        records = [
            {
                "segment": {
                    "id": sid,
                    "position": 1,
                    "document_id": doc,
                    "content": text,
                    "document": {
                        "id": doc,
                        "data_source_type": "upload_file",
                        "name": f"{doc}.txt",
                    },
                },
                "score": score,
            }
            for score, sid, doc, text in scored[:top_k]
            if score > 0
        ]
        return json_answer(200, {"query": {"content": body["query"]}, "records": records})
    if path == base + "/document/create-by-file":
        raw = body.get("_raw", b"")
        assert b'name="file"' in raw and b"indexing_technique" in raw
        return json_answer(200, {"document": {"id": "remote-doc-9", "name": "x"}, "batch": "b1"})
    return json_answer(404, {"code": "not_found", "message": path})


def _invalid_retrieval_model(model: Any) -> str:
    """Why Dify would refuse this ``retrieval_model`` ('' when it would take it); absent is
    allowed (the dataset's own model is used)."""
    if model is None:
        return ""
    if not isinstance(model, dict):
        return "retrieval_model: Input should be a valid dictionary"
    for name, kind in RETRIEVAL_MODEL_FIELDS.items():
        if name not in model:
            return f"retrieval_model.{name}: Field required"
        if not isinstance(model[name], kind) or (kind is int and isinstance(model[name], bool)):
            return f"retrieval_model.{name}: Input should be a valid {kind.__name__}"
    if model["search_method"] not in SEARCH_METHODS:
        return f"retrieval_model.search_method: Input should be one of {SEARCH_METHODS}"
    return ""
