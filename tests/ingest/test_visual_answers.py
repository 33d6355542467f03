"""Answers with images: the chat model (the real OpenAI client against a local server) gets the
figures as image_url data URLs after one numbering of text, attachments and images, and the
citation check covers all of them."""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any

import pytest
from PIL import Image

from eagle_rag.bootstrap import EagleApp
from eagle_rag.generation.engine import AnswerRequest
from eagle_rag.generation.prompt import Attachment
from eagle_rag.plugins.payloads import QueryRequest
from tests.chat_fakes import openai_model, sse
from tests.http_fakes import json_answer
from tests.ingest import visual_docs as vd

pytestmark = pytest.mark.asyncio(loop_scope="module")
QUESTION = "Which region had the highest turbine output by region?"


async def _report(app: EagleApp, kb: str) -> None:
    await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name=kb,
        filename="report.pdf",
        stream=io.BytesIO(vd.report_pdf()),
    )
    await app.queue.join()  # type: ignore[attr-defined]


def _ask(kb: str, **options: Any) -> AnswerRequest:
    return AnswerRequest(
        QueryRequest(QUESTION, kb_names=(kb,), top_k=10),
        top_n=2,
        attachments=(Attachment("notes.txt", "bring the wind logs"),),
        **options,
    )


async def test_images_reach_the_model_numbered_after_text_and_attachments(
    app: EagleApp, kb: str
) -> None:
    await _report(app, kb)
    image_number: list[int] = []

    def reply(body: dict[str, Any]) -> Any:
        return sse(f"The north led [1], see the chart [{image_number[0]}].")

    with openai_model(app, reply) as recorded:
        request = _ask(kb)
        # the image's number is known once sources are: text 1..2, attachment 3, images 4..
        image_number.append(len(request.attachments) + 2 + 1)
        result = await app.answers.answer(request)
    sources = result["sources"]
    assert [s["index"] for s in sources["text"]] == [1, 2]
    assert sources["attachments"] == [{"index": 3, "name": "notes.txt"}]
    figure = sources["image"][0]
    assert figure["index"] == 4 and figure["chunk_type"] == "image"
    assert result["warnings"] == []  # [4] is an image that was sent: in range
    generate = next(s for s in result["steps"] if s["name"] == "generate")
    assert generate["cited"] == [1, 4] and generate["out_of_range"] == []

    _, body, _ = recorded.requests[-1]
    user = body["messages"][-1]["content"]
    assert isinstance(user, list) and user[0]["type"] == "text"
    prompt = user[0]["text"]
    assert "[3] file: notes.txt" in prompt
    assert f"[4] image_id={figure['image_id']}" in prompt and vd.FIGURE_CAPTION in prompt
    pictures = [part for part in user if part["type"] == "image_url"]
    assert len(pictures) == len(sources["image"])
    header, encoded = pictures[0]["image_url"]["url"].split(",", 1)
    assert header == "data:image/png;base64"
    assert Image.open(io.BytesIO(base64.b64decode(encoded))).size == (
        figure["width"],
        figure["height"],
    )


async def test_a_citation_past_the_images_is_reported_and_a_lost_picture_is_skipped(
    app: EagleApp, kb: str
) -> None:
    await _report(app, kb)
    pack = await app.retrieval.search(QueryRequest(QUESTION, kb_names=(kb,), top_k=10))
    images = [p for p in pack.passages if "image_id" in p.metadata]
    for passage in images:  # the pictures go missing from the store: captions still sent
        app.objects.delete(passage.metadata["fields"]["object_key"])
    too_far = 2 + 1 + len(images) + 1

    with openai_model(app, lambda body: sse(f"Unsupported [{too_far}].")) as recorded:
        result = await app.answers.answer(_ask(kb))
    assert result["warnings"] and str(too_far) in result["warnings"][0]
    _, body, _ = recorded.requests[-1]
    user = body["messages"][-1]["content"]
    assert isinstance(user, str) and "REFERENCE IMAGES" in user  # no picture parts


async def test_send_images_off_keeps_captions_only(app: EagleApp, kb: str) -> None:
    await _report(app, kb)
    config = app.answers._config
    previous = config.send_images
    object.__setattr__(config, "send_images", False)
    try:
        with openai_model(app, lambda body: sse("ok [1].")) as recorded:
            await app.answers.answer(_ask(kb))
    finally:
        object.__setattr__(config, "send_images", previous)
    _, body, _ = recorded.requests[-1]
    assert isinstance(body["messages"][-1]["content"], str)


def _text_only(body: dict[str, Any]) -> Any:
    """A text-only chat endpoint: any image part is a 400, as such providers answer it."""
    user = body["messages"][-1]["content"]
    if isinstance(user, list) and any(part["type"] == "image_url" for part in user):
        return json_answer(400, {"error": {"message": "image input is not supported"}})
    return sse("The north led [1].")


async def test_a_text_only_model_gets_the_question_again_without_pictures(
    app: EagleApp, kb: str
) -> None:
    await _report(app, kb)
    with openai_model(app, _text_only, model_name="text-only") as recorded:
        first = await app.answers.answer(_ask(kb))
        assert first["answer"] == "The north led [1]." and first["sources"]["image"]
        assert any("refused the images (400)" in w for w in first["warnings"])
        refused, retried = (body for _, body, _ in recorded.requests)
        assert isinstance(refused["messages"][-1]["content"], list)
        prompt = retried["messages"][-1]["content"]
        assert isinstance(prompt, str) and vd.FIGURE_CAPTION in prompt  # captions stay
        generate = next(s for s in first["steps"] if s["name"] == "generate")
        assert generate["status"] == "warning"

        second = await app.answers.answer(_ask(kb))  # remembered: one request, text only
    assert second["answer"] == "The north led [1]."
    assert any("refused images before" in w for w in second["warnings"])
    assert len(recorded.requests) == 3
    assert isinstance(recorded.requests[-1][1]["messages"][-1]["content"], str)


async def test_a_refusal_that_is_not_about_pictures_stays_an_error(app: EagleApp, kb: str) -> None:
    await _report(app, kb)

    def unauthorised(body: dict[str, Any]) -> Any:
        return json_answer(401, {"error": {"message": "bad key"}})

    with openai_model(app, unauthorised, model_name="locked") as recorded:
        result = await app.answers.answer(_ask(kb))
    assert result["error"]["code"] == "model_provider_error" and "401" in result["error"]["message"]
    assert len(recorded.requests) == 1
