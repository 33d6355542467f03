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
        top_k = body["retrieval_model"]["top_k"]
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
