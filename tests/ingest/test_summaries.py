"""Section summaries written by the chat model when one is configured, extractive otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from tests.chat_fakes import openai_model, sse
from tests.http_fakes import json_answer
from tests.ingest.test_pipeline import _ingest

pytestmark = pytest.mark.asyncio(loop_scope="module")

GUIDE = b"""# Guide

Opening words of the guide.

## Setup

### Power
Plug the unit into a grounded socket.

### Network
Connect the cable to port one.
"""


def summaries(app: EagleApp, document_id: str) -> dict[str, dict[str, Any]]:
    rows = app.vectors.query(
        TEXT_COLLECTION, f.eq("document_id", document_id) & f.eq("type", "section_summary")
    )
    return {row["path"]: row for row in rows}


async def test_the_chat_model_writes_section_summaries(app: EagleApp, kb: str) -> None:
    def reply(body: dict[str, Any]) -> Any:
        section = body["messages"][0]["content"]
        return sse("About power." if "grounded socket" in section else "About the guide.")

    with openai_model(app, reply) as recorded:
        submission = await _ingest(app, kb, GUIDE, "guide.md")
    found = summaries(app, submission.document_id)
    assert found["Guide/Setup"]["text"].startswith("Setup\n")
    assert "About power." in found["Guide/Setup"]["text"]
    assert found["Guide/Setup"]["metadata"]["summary_by"] == "openai:m"
    assert (
        recorded.requests
        and "for a search index" in recorded.requests[0][1]["messages"][0]["content"]
    )
    task = app.repositories.tasks.get(submission.job_id)
    assert task.status == "completed"
    assert any("section summaries by openai:m" in line for line in task.log)


async def test_a_failing_model_keeps_the_extractive_summary(app: EagleApp, kb: str) -> None:
    with openai_model(app, lambda body: json_answer(500, {"error": "down"})):
        submission = await _ingest(app, kb, GUIDE.replace(b"one", b"two"), "guide2.md")
    task = app.repositories.tasks.get(submission.job_id)
    assert task.status == "completed"
    assert any("kept extractive after a model failure" in line for line in task.log)
    setup = summaries(app, submission.document_id)["Guide/Setup"]
    assert "summary_by" not in setup["metadata"]
    assert "Sections: Power; Network" in setup["text"]


async def test_no_model_means_extractive_summaries(app: EagleApp, kb: str) -> None:
    submission = await _ingest(app, kb, GUIDE.replace(b"one", b"three"), "guide3.md")
    setup = summaries(app, submission.document_id)["Guide/Setup"]
    assert "Sections: Power; Network" in setup["text"]
    assert not any(
        "section summaries" in line for line in app.repositories.tasks.get(submission.job_id).log
    )
