"""The English ONNX MiniLM: real vectors, true token counts, and its place in the factory."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from eagle_rag.bootstrap import bootstrap
from eagle_rag.errors import BackendUnavailableError
from eagle_rag.models.factory import build_text_encoder
from eagle_rag.models.minilm import MiniLMEncoder
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import EmbeddingSettings, load_settings
from tests.retrieval.conftest import SOLAR


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    return MiniLMEncoder()


def test_related_texts_are_closer(minilm: MiniLMEncoder) -> None:
    passages = minilm.embed_passages(
        ["The inverter converts direct current.", "Bake the bread at 220 degrees."]
    )
    query = minilm.embed_queries(["what does an inverter do"])[0]
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    scores = passages @ query
    assert scores[0] > 0.5 > scores[1]


def test_batches_match_single_texts(minilm: MiniLMEncoder) -> None:
    texts = ["short", "a much longer sentence that needs padding in the batch it shares"]
    batch = minilm.embed_passages(texts)
    single = np.vstack([minilm.embed_passages([t]) for t in texts])
    assert np.allclose(batch, single, atol=1e-4)  # padding is masked out of the mean


def test_token_counts_are_not_truncated(minilm: MiniLMEncoder) -> None:
    assert minilm.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    assert minilm.count_tokens("hello world " * 300) == 602
    assert minilm.embed_passages(["hello world " * 300]).shape == (1, 384)  # truncated to 256


def test_the_factory_builds_it_and_deterministic_still_wins() -> None:
    assert isinstance(build_text_encoder(EmbeddingSettings(provider="minilm")), MiniLMEncoder)
    chosen = build_text_encoder(EmbeddingSettings(provider="minilm", encoder_mode="deterministic"))
    assert chosen.name.startswith("hashing")


def test_the_session_runs_without_the_cpu_memory_arena_unless_configured() -> None:
    # The arena keeps the largest batch x width it has seen: RSS bounded only without it.
    default = build_text_encoder(EmbeddingSettings(provider="minilm"))
    assert isinstance(default, MiniLMEncoder)
    session, _ = default._load()
    assert session.get_session_options().enable_cpu_mem_arena is False
    arena = build_text_encoder(EmbeddingSettings(provider="minilm", onnx_memory_arena=True))
    assert isinstance(arena, MiniLMEncoder)
    session, _ = arena._load()
    assert session.get_session_options().enable_cpu_mem_arena is True
    # Without the arena the vectors are the same.
    text = ["The inverter converts direct current."]
    assert np.allclose(default.embed_passages(text), arena.embed_passages(text), atol=1e-6)


def test_missing_packages_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MiniLMEncoder, "available", staticmethod(lambda: False))
    with pytest.raises(BackendUnavailableError, match="MiniLM packages are not installed"):
        build_text_encoder(EmbeddingSettings(provider="minilm", encoder_mode="require_native"))
    fallback = build_text_encoder(EmbeddingSettings(provider="minilm"))
    assert fallback.name.startswith("hashing")


async def test_an_english_kb_end_to_end(tmp_path: Path) -> None:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_EMBEDDING_PROVIDER": "minilm"}
    )
    app = await bootstrap(settings)
    try:
        assert app.text_encoder.name == "all-MiniLM-L6-v2-int8"
        app.repositories.knowledge_bases.create("en")
        app.ingest.submit_file(kb_name="en", filename="solar.md", stream=io.BytesIO(SOLAR.encode()))
        await app.queue.join()
        pack = await app.retrieval.search(
            QueryRequest("what converts direct current", kb_names=("en",), mode="dense")
        )
        assert pack.passages[0].path == "Solar Guide/Installation/Wiring"
    finally:
        await app.stop()
