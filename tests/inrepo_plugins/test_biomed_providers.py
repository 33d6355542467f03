"""The optional providers behind Core's ports, against local HTTP servers speaking their protocol:
a MedCPT-style pair of domain encoders (article / query models) on an OpenAI-compatible
``/embeddings`` endpoint, and a cross-encoder on a Cohere-style or a TEI ``/rerank`` endpoint."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.db.records import DocumentRecord
from eagle_rag.errors import EagleError
from eagle_rag.index.collections import DENSE_FIELD, TEXT_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.models.minilm import MiniLMEncoder
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings
from tests.http_fakes import Recorded, embeddings_body, json_answer, serve

DIM = 16
ARTICLE = """# Aspirin

## Results
Aspirin reduced stroke in atrial fibrillation; warfarin reduced it more.
"""


@pytest.fixture
def endpoints() -> Iterator[tuple[str, Recorded]]:
    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        if path.endswith("/embeddings"):
            return json_answer(200, embeddings_body(body["input"], DIM))
        documents = body["documents"]
        # the cross-encoder prefers the passage that mentions warfarin
        results = [
            {"index": i, "relevance_score": 1.0 if "warfarin" in d.lower() else 0.1}
            for i, d in enumerate(documents)
        ]
        return json_answer(200, {"results": results})

    with serve(answer) as (url, recorded):
        yield url, recorded


def biomed_settings(data: Path, options: dict[str, Any]) -> Any:
    """The biomed profile on the hashing host encoder, with these plugin options."""
    return load_settings(
        {"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={
            "plugins": {
                "enabled": ["eagle_rag.plugins.core_defaults", "plugins.biomed"],
                "default_namespace": "biomed",
                "options": {"biomed": options},
            }
        },
    )


def settings_with(data: Path, url: str, **extra: Any) -> Any:
    options = {
        "encoder": {"provider": "openai", "base_url": url, "model": "medcpt-article", "dim": DIM},
        "query_encoder": {
            "provider": "openai",
            "base_url": url,
            "model": "medcpt-query",
            "dim": DIM,
        },
        "reranker": {"provider": "http", "style": "cohere", "url": f"{url}/rerank"},
        **extra,
    }
    return biomed_settings(data, options)


async def ingest_article(app: EagleApp) -> DocumentRecord:
    """ARTICLE ingested into the KB ``med``; the document, completed."""
    app.repositories.knowledge_bases.create("med")
    app.ingest.submit_file(kb_name="med", filename="a.md", stream=io.BytesIO(ARTICLE.encode()))
    await app.queue.join()  # type: ignore[attr-defined]
    [document] = app.repositories.documents.list(kb_name="med")
    assert document.status == "completed"
    return document


async def test_domain_encoders_and_cross_encoder_behind_the_same_ports(
    tmp_path: Path, endpoints: tuple[str, Recorded]
) -> None:
    url, recorded = endpoints
    app = await bootstrap(settings_with(tmp_path, url))
    try:
        assert app.encoders.collection_dim("eagle_text_biomed") == DIM
        assert app.encoders.query_encoder_for("eagle_text_biomed") == "biomed-query"
        await ingest_article(app)
        models = [body.get("model") for path, body, _ in recorded.requests if "embed" in path]
        assert "medcpt-article" in models  # passages with the article encoder
        pack = await app.retrieval.search(QueryRequest("aspirin for stroke", kb_names=("med",)))
        models = [body.get("model") for path, body, _ in recorded.requests if "embed" in path]
        assert "medcpt-query" in models  # queries with the query encoder
        assert any(path.endswith("/rerank") for path, _, _ in recorded.requests)
        assert pack.passages[0].scores["cross_encoder"] == 1.0
        assert "warfarin" in pack.passages[0].text.lower()
    finally:
        await app.stop()


async def test_cross_encoder_under_tei_speaks_its_rerank_protocol(tmp_path: Path) -> None:
    """A MedCPT cross-encoder served by Text Embeddings Inference: ``{query, texts}`` in, a
    bare list of ``{index, score}`` out."""

    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        if path.endswith("/embeddings"):
            return json_answer(200, embeddings_body(body["input"], DIM))
        scores = [1.0 if "warfarin" in t.lower() else 0.1 for t in body["texts"]]
        return json_answer(200, [{"index": i, "score": s} for i, s in enumerate(scores)])

    with serve(answer) as (url, recorded):
        settings = settings_with(tmp_path, url)
        settings.plugins.options["biomed"]["reranker"] = {
            "provider": "http",
            "style": "tei",
            "url": f"{url}/rerank",
        }
        app = await bootstrap(settings)
        try:
            await ingest_article(app)
            pack = await app.retrieval.search(QueryRequest("aspirin for stroke", kb_names=("med",)))
        finally:
            await app.stop()
    [rerank] = [body for path, body, _ in recorded.requests if path.endswith("/rerank")]
    assert rerank["query"] == "aspirin for stroke" and rerank["texts"]
    assert "documents" not in rerank  # TEI's shape, not Cohere's
    assert pack.passages[0].scores["cross_encoder"] == 1.0
    assert "warfarin" in pack.passages[0].text.lower()


async def test_failing_cross_encoder_leaves_the_signal_rerank(tmp_path: Path) -> None:
    def answer(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        if path.endswith("/embeddings"):
            return json_answer(200, embeddings_body(body["input"], DIM))
        return json_answer(500, {"error": "down"})

    with serve(answer) as (url, _recorded):
        settings = settings_with(tmp_path, url)
        settings.plugins.options["biomed"]["reranker"]["max_retries"] = 0
        app = await bootstrap(settings)
        try:
            await ingest_article(app)
            pack = await app.retrieval.search(QueryRequest("aspirin", kb_names=("med",)))
            assert pack.passages
            assert "cross_encoder" not in pack.passages[0].scores
            assert "biomed_entity" in pack.passages[0].scores
        finally:
            await app.stop()


async def test_query_encoder_of_another_dimension_is_refused(
    tmp_path: Path, endpoints: tuple[str, Recorded]
) -> None:
    url, _ = endpoints
    settings = settings_with(tmp_path, url)
    settings.plugins.options["biomed"]["query_encoder"]["dim"] = DIM * 2
    with pytest.raises(EagleError) as caught:
        await bootstrap(settings)
    assert "one dimension" in caught.value.message


async def test_offline_minilm_encoder_writes_and_searches_the_view(tmp_path: Path) -> None:
    """``encoder: {provider: minilm}``, the offline second encoder (the seed's multi-encoder
    merge): the view holds MiniLM's vectors of each chunk, eagle_text keeps the host's, and an
    entity query searches the view densely with MiniLM beside eagle_text's own dense search."""
    app = await bootstrap(biomed_settings(tmp_path, {"encoder": {"provider": "minilm"}}))
    try:
        assert app.encoders.query_encoder_for("eagle_text_biomed") == "biomed-passage"
        document = await ingest_article(app)
        where = eq("document_id", document.id)

        def rows(collection: str) -> list[dict[str, Any]]:
            found = app.vectors.query(collection, where, output_fields=["id", "text", DENSE_FIELD])
            return sorted(found, key=lambda r: str(r["id"]))

        view, base = rows("eagle_text_biomed"), rows(TEXT_COLLECTION)
        assert view and [r["id"] for r in view] == [r["id"] for r in base]
        view_vectors = np.array([r[DENSE_FIELD] for r in view])
        expected = MiniLMEncoder().embed_passages([str(r["text"]) for r in view])
        assert np.allclose(view_vectors, expected, atol=1e-4)  # MiniLM's, not the host's
        assert not np.allclose(view_vectors, np.array([r[DENSE_FIELD] for r in base]))

        pack = await app.retrieval.search(QueryRequest("aspirin for stroke", kb_names=("med",)))
        steps = {step.name: step for step in pack.steps}
        assert steps["eagle_text_biomed:dense"].status == "ok"
        assert steps["eagle_text:dense"].status == "ok"
        assert "aspirin" in pack.passages[0].text.lower()
    finally:
        await app.stop()


async def test_a_view_written_by_another_encoder_of_its_dimension_is_refused(
    tmp_path: Path,
) -> None:
    """MiniLM and the host's encoder both make 384-d vectors: dropping the option after an
    ingest would search MiniLM's vectors with the host's queries. Start-up refuses instead;
    with milvus.reembed_on_encoder_change the view is refilled with the host's vectors."""
    app = await bootstrap(biomed_settings(tmp_path, {"encoder": {"provider": "minilm"}}))
    try:
        await ingest_article(app)
    finally:
        await app.stop()
    with pytest.raises(EagleError) as caught:
        await bootstrap(biomed_settings(tmp_path, {}))
    message = caught.value.message
    assert "eagle_text_biomed" in message
    assert f"{MiniLMEncoder.name!r} but is configured with 'hashing-384'" in message
    settings = biomed_settings(tmp_path, {})
    settings.milvus.reembed_on_encoder_change = True
    again = await bootstrap(settings)
    try:
        await again.queue.join()  # type: ignore[attr-defined]
        fields = ["id", DENSE_FIELD]
        view = again.vectors.query("eagle_text_biomed", eq("kb_name", "med"), output_fields=fields)
        base = again.vectors.query(TEXT_COLLECTION, eq("kb_name", "med"), output_fields=fields)
        assert view and {r["id"]: r[DENSE_FIELD] for r in view} == {
            r["id"]: r[DENSE_FIELD] for r in base if r["id"] in {v["id"] for v in view}
        }  # the host's vectors again, as without the option
    finally:
        await again.stop()


async def test_minilm_view_without_its_packages_refuses_to_start_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's set-up: ``encoder_mode: require_native`` inside the option stops start-up
    with the reason; without it the view falls back to hashing (logged), as Core's encoder."""
    monkeypatch.setattr(MiniLMEncoder, "available", staticmethod(lambda: False))
    required = {"provider": "minilm", "encoder_mode": "require_native"}
    with pytest.raises(EagleError, match="MiniLM packages are not installed"):
        await bootstrap(biomed_settings(tmp_path / "required", {"encoder": required}))
    app = await bootstrap(biomed_settings(tmp_path / "auto", {"encoder": {"provider": "minilm"}}))
    try:
        assert app.encoders.get("biomed-passage").name.startswith("hashing")
    finally:
        await app.stop()
