"""A local OpenAI-compatible chat server whose model answers from the prompt it is sent: the
sentence that shares most words with the question, cited as ``[1]``. So an answer can only hold
a document's text if the framework put the retrieved passage into the prompt."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.http_fakes import Recorded, json_answer, serve

WORD = re.compile(r"[a-z]{3,}")
STOP = frozenset({"the", "and", "how", "what", "with", "are", "for", "this", "that", "query"})


def best_sentence(prompt: str, question: str) -> str:
    wanted = set(WORD.findall(question.lower())) - STOP
    sentences = [
        s.strip()
        for s in re.split(r"(?<=[.!?])\s+|\n", prompt)
        if s.strip() and question.strip() not in s
    ]
    scored = [(len(wanted & set(WORD.findall(s.lower()))), -i, s) for i, s in enumerate(sentences)]
    return max(scored)[2] if scored else ""


def reply(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    messages = body.get("messages") or []
    prompt = "\n".join(_text(m.get("content")) for m in messages)
    question = _question(_text(messages[-1].get("content")) if messages else "")
    answer = f"{best_sentence(prompt, question)} [1]"
    return json_answer(
        200,
        {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "local"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        },
    )


@contextmanager
def extractive_chat() -> Iterator[tuple[str, Recorded]]:
    """``(base_url ending in /v1, recorded requests)``."""
    with serve(lambda path, body, headers: reply(body)) as (url, recorded):
        yield url + "/v1", recorded


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _question(last: str) -> str:
    """The question inside a framework's prompt (``Query: ...`` / ``Question: ...``), or all."""
    found = re.search(r"(?:Query|Question):\s*(.+)", last)
    return found.group(1).strip() if found else last
