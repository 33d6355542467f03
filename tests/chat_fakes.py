"""A chat model for tests: the real OpenAI-compatible client, talking to a local server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from eagle_rag.models.chat import OpenAICompatibleChat
from tests.http_fakes import Recorded, serve


def sse(*deltas: str, done: bool = True) -> tuple[int, dict[str, str], bytes]:
    """A chat-completions stream that sends ``deltas`` one event each."""
    events = [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": d}}]}) for d in deltas
    ]
    events.insert(0, "data: " + json.dumps({"choices": [{"delta": {"role": "assistant"}}]}))
    if done:
        events.append("data: [DONE]")
    return 200, {"content-type": "text/event-stream"}, ("\n\n".join(events) + "\n\n").encode()


@contextmanager
def openai_model(
    app: Any, reply: Callable[[dict[str, Any]], Any], *, model_name: str = "m"
) -> Iterator[Recorded]:
    """Swap the app's chat model for the OpenAI client against a local server answering
    ``reply(request_body)``; the previous model comes back afterwards."""
    previous = app.answers.model
    with serve(lambda path, body, headers: reply(body)) as (url, recorded):
        model = OpenAICompatibleChat(base_url=url + "/v1", model=model_name, max_retries=0)
        app.answers.model = app.pipeline.chat = model  # answers and section summaries
        try:
            yield recorded
        finally:
            app.answers.model = app.pipeline.chat = previous
