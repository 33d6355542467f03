from __future__ import annotations

import asyncio
import io
from pathlib import Path

import numpy as np
import pytest

from eagle_rag.bootstrap import EagleApp, bootstrap, build_app
from eagle_rag.errors import VectorStoreError
from eagle_rag.index.collections import BASE_COLLECTIONS, DENSE_FIELD, TEXT_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.ingest.service import IngestService, Submission
from eagle_rag.models.minilm import MiniLMEncoder
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import Settings, load_settings
from eagle_rag.storage.keys import object_key


def test_building_the_app_touches_no_backend(settings: Settings) -> None:
    build_app(settings)
    assert not settings.data_dir.exists()


async def test_start_migrates_creates_collections_and_loads_plugins(settings: Settings) -> None:
    app = await bootstrap(settings)
    try:
        assert app.database.revision() == "0002"
        assert set(BASE_COLLECTIONS) <= set(app.vectors.collections())
        assert [p.manifest.namespace for p in app.plugins.loaded] == ["core"]
        kb = app.repositories.knowledge_bases.create("docs")
        assert kb.namespace == "core"
        stored = app.objects.put(object_key(app.namespace, "docs", "d", "a.txt"), io.BytesIO(b"x"))
        assert stored.size == 1
    finally:
        await app.stop()
    # a second start on the same data finds everything in place (restart of the embedded default)
    again = await bootstrap(settings)
    try:
        assert [k.name for k in again.repositories.knowledge_bases.list()] == ["docs"]
    finally:
        await again.stop()


def test_encoder_and_collection_dimensions_must_agree(tmp_path: object) -> None:
    import pytest

    from eagle_rag.errors import SettingsError
    from eagle_rag.settings import load_settings

    settings = load_settings(
        {
            "EAGLE_DATA_DIR": str(tmp_path),
            "EAGLE_ENCODER_MODE": "deterministic",
            "EAGLE_EMBEDDING_DIM": "64",
        }
    )
    with pytest.raises(SettingsError, match=r"makes 64-d vectors but milvus\.text_dim is 384"):
        build_app(settings)


async def test_another_encoder_of_the_same_dimension_is_refused_or_reembeds(
    tmp_path: Path,
) -> None:
    """The hashing encoder and MiniLM both make 384-d vectors: switching after an ingest
    would rank by noise without an error, so start-up refuses, naming both, and loses nothing.
    With milvus.reembed_on_encoder_change the KBs are run through MiniLM instead."""
    hashing = await _ingest_with_hashing(tmp_path)
    env = {"EAGLE_DATA_DIR": str(tmp_path)}
    with pytest.raises(VectorStoreError) as caught:
        await bootstrap(load_settings(env, overrides=MINILM))
    assert caught.value.fields["collection"] == "eagle_text"
    assert "holds vectors of the encoder 'hashing-384'" in caught.value.message
    assert f"configured with {MiniLMEncoder.name!r}" in caught.value.message
    assert await _top_passage(load_settings(hashing)) == "2900 rpm"  # nothing lost

    switched = await bootstrap(load_settings(env, overrides=REEMBED))
    try:
        await switched.queue.join()  # type: ignore[attr-defined]
        assert len(_minilm_rows(switched)) == 1
    finally:
        await switched.stop()
    # MiniLM is recorded now: it starts without the option, the hashing encoder is refused.
    assert await _top_passage(load_settings(env, overrides=MINILM)) == "2900 rpm"
    with pytest.raises(VectorStoreError, match="holds vectors of the encoder 'all-MiniLM"):
        await bootstrap(load_settings(hashing))


async def test_a_process_without_workers_never_reembeds(tmp_path: Path) -> None:
    """Celery workers and CLI commands start without the queue: with the option on they note
    the change but leave the re-embedding (and the record) to the serving process."""
    await _ingest_with_hashing(tmp_path)
    settings = load_settings({"EAGLE_DATA_DIR": str(tmp_path)}, overrides=REEMBED)
    app = await bootstrap(settings, start_queue=False)
    try:
        assert app.vectors.encoder_changes == {TEXT_COLLECTION: MiniLMEncoder.name}
        [text] = [r for r in app.vectors.encoder_records() if r.collection == TEXT_COLLECTION]
        assert (text.recorded, text.state) == ("hashing-384", "conflict")
        assert app.repositories.tasks.count_by_status() == {"completed": 1}  # nothing queued
        [document] = app.repositories.documents.list(kb_name="docs")
        assert document.status == "completed"
        assert app.vectors.count(TEXT_COLLECTION) == 1  # its vectors were not deleted
    finally:
        await app.stop()


async def test_a_crash_before_the_new_encoder_is_recorded_reembeds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new encoder is recorded only after every KB's rebuild is queued: a start that dies
    in between leaves the old record, and the next start queues the rebuild again. Nothing is
    lost or written twice."""
    await _ingest_with_hashing(tmp_path, kbs=("docs", "more"))
    settings = load_settings({"EAGLE_DATA_DIR": str(tmp_path)}, overrides=REEMBED)
    rebuild = IngestService.rebuild
    rebuilt: list[str] = []

    def dies_after_one_kb(service: IngestService, kb_name: str) -> list[Submission]:
        if rebuilt:
            raise RuntimeError("the process died while queuing the rebuild")
        rebuilt.append(kb_name)
        return rebuild(service, kb_name)

    monkeypatch.setattr(IngestService, "rebuild", dies_after_one_kb)
    with pytest.raises(RuntimeError, match="process died"):
        await bootstrap(settings)
    monkeypatch.setattr(IngestService, "rebuild", rebuild)
    # the failed start stopped what it had started: no ingest worker runs on
    assert not [t for t in asyncio.all_tasks() if "InProcessQueue" in repr(t.get_coro())]

    looking = await bootstrap(settings, start_queue=False)
    try:  # the other KB still holds hashing vectors, and the old record stands
        assert looking.vectors.encoder_changes == {TEXT_COLLECTION: MiniLMEncoder.name}
    finally:
        await looking.stop()
    app = await bootstrap(settings)
    try:
        assert app.vectors.encoder_changes == {}  # queued again, then recorded
        await app.queue.join()  # type: ignore[attr-defined]
        for kb in ("docs", "more"):
            assert len(_minilm_rows(app, kb)) == 1
            [document] = app.repositories.documents.list(kb_name=kb)
            assert document.status == "completed"
    finally:
        await app.stop()
    minilm = load_settings({"EAGLE_DATA_DIR": str(tmp_path)}, overrides=MINILM)
    assert await _top_passage(minilm) == "2900 rpm"


MINILM = {"models": {"embedding": {"provider": "minilm", "encoder_mode": "require_native"}}}
REEMBED = {**MINILM, "milvus": {"reembed_on_encoder_change": True}}


async def _ingest_with_hashing(data_dir: Path, kbs: tuple[str, ...] = ("docs",)) -> dict[str, str]:
    """One document in each KB, embedded by the hashing encoder; returns that env."""
    hashing = {"EAGLE_DATA_DIR": str(data_dir), "EAGLE_ENCODER_MODE": "deterministic"}
    app = await bootstrap(load_settings(hashing))
    try:
        for kb in kbs:
            app.repositories.knowledge_bases.create(kb)
            body = io.BytesIO(b"# Pump\n\nThe coolant pump runs at 2900 rpm.\n")
            app.ingest.submit_file(kb_name=kb, filename="pump.md", stream=body)
        await app.queue.join()  # type: ignore[attr-defined]
    finally:
        await app.stop()
    return hashing


def _minilm_rows(app: EagleApp, kb: str = "docs") -> list[dict[str, object]]:
    """A KB's text rows, checked to be MiniLM's vectors of their own text."""
    rows = app.vectors.query(
        TEXT_COLLECTION, eq("kb_name", kb), output_fields=["text", DENSE_FIELD]
    )
    expected = MiniLMEncoder().embed_passages([str(r["text"]) for r in rows])
    assert rows and np.allclose([r[DENSE_FIELD] for r in rows], expected, atol=1e-4)
    return [dict(r) for r in rows]


async def _top_passage(settings: Settings) -> str:
    app = await bootstrap(settings)
    try:
        pack = await app.retrieval.search(QueryRequest("coolant pump", kb_names=("docs",)))
        return "2900 rpm" if "2900 rpm" in pack.passages[0].text else pack.passages[0].text
    finally:
        await app.stop()


def test_a_start_refused_for_a_held_data_dir_leaves_the_database_schema_alone(
    tmp_path: Path,
) -> None:
    """A second process on a data dir a server holds (a newer release, say) migrated the
    server's database before Milvus Lite refused it the data dir."""
    from sqlalchemy import create_engine, inspect

    from eagle_rag.errors import BackendUnavailableError
    from tests.lite_holder import lite_data_dir_held

    data = tmp_path / "data"
    data.mkdir()
    settings = load_settings({"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"})
    with lite_data_dir_held(str(data / "milvus.db")), pytest.raises(BackendUnavailableError):
        asyncio.run(bootstrap(settings))
    engine = create_engine(settings.database.url)
    try:
        assert inspect(engine).get_table_names() == []
    finally:
        engine.dispose()
