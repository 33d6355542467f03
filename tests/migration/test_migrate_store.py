"""``migrate-store``: the embedded default (SQLite, Milvus Lite, a local directory) carried to
PostgreSQL, a Milvus server and an S3 API server; searched there with the same results."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pymilvus import MilvusClient
from typer.testing import CliRunner

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.cli import app as cli
from eagle_rag.index.collections import ENCODER_PROPERTY, TEXT_COLLECTION
from eagle_rag.ingest.queue import InProcessQueue
from eagle_rag.plugins.contract import milvus_database_for
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings
from tests.databases import postgres_database
from tests.servers import milvus_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPICS = [
    ("inverter", "The inverter is wired to bus bar seven through a forty amp fuse."),
    ("pump", "The coolant pump runs at 2900 rpm and is serviced every spring."),
    ("valve", "The relief valve opens at twelve bar of line pressure."),
    ("battery", "Battery modules are balanced overnight at a float voltage."),
    ("cable", "Armoured cable runs through the east trench to the substation."),
    ("sensor", "Each temperature sensor reports every ten seconds over Modbus."),
    ("meter", "电表每十五分钟上报一次读数，数据进入调度系统。"),
    ("fan", "The cooling fan speeds up when the cabinet passes forty degrees."),
]
QUERIES = [
    "inverter fuse",
    "how fast does the pump run",
    "relief valve pressure",
    "battery float voltage",
    "cable trench",
    "Modbus sensor",
    "电表读数",
    "cooling fan cabinet temperature",
    "substation",
    "spring service",
]


def _env(data_dir: Path) -> dict[str, str]:
    return {"EAGLE_DATA_DIR": str(data_dir), "EAGLE_ENCODER_MODE": "deterministic"}


async def _fill(app: EagleApp) -> None:
    for kb in ("plant", "site"):
        app.repositories.knowledge_bases.create(kb)
    for number, (name, text) in enumerate(TOPICS):
        body = f"# {name.title()}\n\n{text}\n\n## Notes\n\nEntry {number} of the {name} log.\n"
        app.ingest.submit_file(
            kb_name="plant" if number % 2 else "site",
            filename=f"{name}.md",
            stream=io.BytesIO(body.encode()),
            tags=[name],
        )
    assert isinstance(app.queue, InProcessQueue)
    await app.queue.join()
    await app.flush_vectors()
    session = app.repositories.sessions.create(title="shift", kb_names=["plant"])
    app.repositories.sessions.add_message(session.id, role="user", content="pump speed?")
    app.repositories.sessions.add_message(session.id, role="assistant", content="2900 rpm [1]")


async def _results(app: EagleApp) -> list[list[tuple[str, float]]]:
    found = []
    for query in QUERIES:
        # Recall and fusion only: parent expansion's reading-order fallback ranks zero-score
        # children, which Milvus Lite and a Milvus server order differently (not the data).
        request = QueryRequest(query, kb_names=("plant", "site"), expand_parents=False)
        pack = await app.retrieval.search(request)
        found.append(_canonical([(p.chunk_id, round(p.score, 6)) for p in pack.passages]))
    return found


def _canonical(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Ties in any order: the scores in rank order, and the ids of every score above the last.

    Rows tied at the cut-off (e.g. several at dense similarity 0) may come back in any order
    from either store, so which of them fills the last places is not part of the comparison.
    """
    if not ranked:
        return []
    floor = ranked[-1][1]
    above = sorted((p for p in ranked if p[1] > floor), key=lambda p: (-p[1], p[0]))
    return above + [("<tied>", floor)] * (len(ranked) - len(above))


@pytest.fixture
def source(tmp_path: Path) -> dict[str, Any]:
    """A filled embedded store; returns its env and the search results it gives."""
    data_dir = tmp_path / "source"

    async def build() -> list[list[tuple[str, float]]]:
        app = await bootstrap(load_settings(_env(data_dir)))
        try:
            await _fill(app)
            return await _results(app)
        finally:
            await app.stop()

    return {"env": _env(data_dir), "results": asyncio.run(build())}


@pytest.fixture
def target(tmp_path: Path, s3_endpoint: str) -> Iterator[dict[str, Any]]:
    """Empty production stores: a fresh database, a Milvus server, a bucket of our own."""
    with (
        postgres_database() as url,
        milvus_server(tmp_path / "milvus", tmp_path) as uri,
    ):
        overlay = {
            "database": {"url": url},
            # Exact search on both sides: the comparison is about the copied data, and filtered
            # HNSW (the server's AUTO) can miss a parent's children that FLAT finds.
            "milvus": {"uri": uri, "index_type": "FLAT"},
            "storage": {
                "backend": "s3",
                "s3": {
                    "bucket": f"migrate-{tmp_path.name[-20:].lower().replace('_', '-')}",
                    "endpoint_url": s3_endpoint,
                    "access_key_id": "testing",
                    "secret_access_key": "testing-secret",
                },
            },
        }
        path = tmp_path / "target.yaml"
        path.write_text(yaml.safe_dump(overlay))
        yield {"file": path, "overlay": overlay}


def _migrate(env: dict[str, str], to: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["migrate-store", "--to", str(to), "--json"], env=env)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_migrate_store_copies_everything_and_a_second_run_copies_nothing(
    source: dict[str, Any], target: dict[str, Any]
) -> None:
    first = _migrate(source["env"], target["file"])
    assert first["verified"], first
    copied = first["copied"]
    assert copied["knowledge_bases"] == 2
    assert copied["documents"] == len(TOPICS)
    assert copied["document_tags"] == len(TOPICS)
    assert copied["tasks"] == len(TOPICS)
    assert copied["chat_sessions"] == 1 and copied["messages"] == 2
    assert copied["objects"] == len(TOPICS)
    assert copied[f"vectors:{TEXT_COLLECTION}"] >= 2 * len(TOPICS)
    assert first["sampled_vectors"] > 0 and first["mismatched_vectors"] == []
    assert _recorded_encoder(target["overlay"]["milvus"]["uri"]) == "hashing-384"

    second = _migrate(source["env"], target["file"])
    assert second["total_copied"] == 0, second
    assert second["verified"]

    async def on_target() -> tuple[list[list[tuple[str, float]]], bytes]:
        settings = load_settings(source["env"], overrides=target["overlay"])
        app = await bootstrap(settings)
        try:
            document = next(d for d in app.repositories.documents.list() if d.filename == "pump.md")
            assert document.object_key is not None
            original = b"".join(app.objects.open(document.object_key))
            return await _results(app), original
        finally:
            await app.stop()

    results, original = asyncio.run(on_target())
    assert original.startswith(b"# Pump")
    # Same passages in the same order with the same scores, BM25 included (CJK query too).
    assert results == source["results"]
    assert all(found for found in results)


def test_a_target_of_another_encoder_is_refused_before_anything_is_written(
    source: dict[str, Any], target: dict[str, Any]
) -> None:
    """The encoder was checked only when the vectors were copied, after the metadata: the
    refusal left the source's KBs and "completed" documents on the target without vectors."""
    minilm = {"models": {"embedding": {"provider": "minilm", "encoder_mode": "require_native"}}}
    on_target = load_settings(source["env"], overrides={**target["overlay"], **minilm})

    async def catalog(fill: bool) -> tuple[list[str], int]:
        app = await bootstrap(on_target)
        try:
            if fill:
                app.repositories.knowledge_bases.create("theirs")
                body = io.BytesIO(b"# Delta\n\nThe delta pump is serviced in spring.\n")
                app.ingest.submit_file(kb_name="theirs", filename="d.md", stream=body)
                await app.queue.join()  # type: ignore[attr-defined]
            kbs = sorted(k.name for k in app.repositories.knowledge_bases.list())
            return kbs, app.repositories.documents.count()
        finally:
            await app.stop()

    before = asyncio.run(catalog(fill=True))
    assert before == (["theirs"], 1)
    refused = CliRunner().invoke(
        cli, ["migrate-store", "--to", str(target["file"])], env=source["env"]
    )
    assert refused.exit_code == 2, refused.output
    assert "holds vectors of the encoder" in " ".join(refused.output.split())
    assert asyncio.run(catalog(fill=False)) == before  # nothing of the source's was written


def _recorded_encoder(uri: str) -> str:
    """The encoder the copy's eagle_text records (read before any app starts on it)."""
    client = MilvusClient(uri=uri, db_name=milvus_database_for("core"))
    try:
        properties = client.describe_collection(TEXT_COLLECTION).get("properties") or {}
    finally:
        client.close()
    return str(properties.get(ENCODER_PROPERTY))


def test_migrate_store_refuses_a_missing_target_file(source: dict[str, Any]) -> None:
    result = CliRunner().invoke(
        cli, ["migrate-store", "--to", "/nonexistent/target.yaml"], env=source["env"]
    )
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_migrate_store_refuses_an_unknown_profile(source: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli, ["migrate-store", "--to", "no-such"], env=source["env"])
    assert result.exit_code == 2
    assert "no-such" in result.output
