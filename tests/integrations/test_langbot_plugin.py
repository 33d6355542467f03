"""The LangBot KnowledgeEngine component, with the real langbot-plugin SDK, against a real
Eagle-RAG server on 127.0.0.1.

LangBot itself (the host that stores uploaded files and calls the component over RPC) is not
available here; a small host object stands in for its file storage and plugin config.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from langbot_plugin.api.definition.components.knowledge_engine.engine import KnowledgeEngine
from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus
from langbot_plugin.api.entities.builtin.rag.models import (
    FileMetadata,
    FileObject,
    IngestionContext,
)

from tests.api.server import RunningServer, running_server
from tests.ingest.documents import pdf_bytes
from tests.retrieval.conftest import SOLAR

PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "langbot"
KEY = "langbot-key"


def load_component() -> Any:
    path = PLUGIN / "components" / "knowledge_engine" / "eagle_rag.py"
    spec = importlib.util.spec_from_file_location("eagle_rag_langbot_engine", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Host:
    """Stands in for LangBot: its file storage, the plugin's storage (LangBotAPIProxy's
    ``*_plugin_storage`` calls) and the plugin's installation config."""

    plugin_runtime_handler = None

    def __init__(self, config: dict[str, Any], storage: dict[str, bytes] | None = None) -> None:
        self.files: dict[str, bytes] = {}
        self.config = config
        self.storage = {} if storage is None else storage

    async def get_knowledge_file_stream(self, storage_path: str) -> bytes:
        return self.files[storage_path]

    async def set_plugin_storage(self, key: str, value: bytes) -> None:
        self.storage[key] = value

    async def get_plugin_storage_keys(self) -> list[str]:
        return list(self.storage)

    async def delete_plugin_storage(self, key: str) -> None:
        del self.storage[key]

    def get_config(self) -> dict[str, Any]:
        return self.config


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(
        tmp_path_factory.mktemp("langbot"), server={"api_keys": [{"name": "lb", "key": KEY}]}
    ) as running:
        yield running


@pytest.fixture
def settings(server: RunningServer) -> dict[str, Any]:
    return {"eagle_url": server.url, "api_key": KEY, "kb_name": "langbot-docs"}


def engine_for(
    settings: dict[str, Any], storage: dict[str, bytes] | None = None
) -> tuple[Any, Host]:
    """A fresh engine; ``storage``: the plugin storage a previous run left (a restart)."""
    module = load_component()
    engine = module.EagleRagEngine()
    host = Host({"eagle_url": settings["eagle_url"], "api_key": settings["api_key"]}, storage)
    engine.plugin = host
    return engine, host


def upload(
    host: Host,
    settings: dict[str, Any],
    name: str,
    data: bytes,
    mime: str,
    document_id: str,
    **extra: Any,
) -> IngestionContext:
    host.files[f"kb/{name}"] = data
    meta = FileMetadata(
        filename=name,
        file_size=len(data),
        mime_type=mime,
        document_id=document_id,
        knowledge_base_id="lb-kb-1",
        extra=extra,
    )
    return IngestionContext(
        file_object=FileObject(metadata=meta, storage_path=f"kb/{name}"),
        knowledge_base_id="lb-kb-1",
        creation_settings=settings,
    )


def test_manifests_declare_the_component() -> None:
    manifest = yaml.safe_load((PLUGIN / "manifest.yaml").read_text())
    assert manifest["kind"] == "Plugin"
    assert manifest["spec"]["components"]["KnowledgeEngine"]["fromDirs"][0]["path"] == (
        "components/knowledge_engine/"
    )
    component = yaml.safe_load(
        (PLUGIN / "components" / "knowledge_engine" / "eagle_rag.yaml").read_text()
    )
    assert component["kind"] == "KnowledgeEngine"
    assert [i["name"] for i in component["spec"]["creation_schema"]] == [
        "eagle_url",
        "api_key",
        "kb_name",
    ]
    assert {i["name"] for i in component["spec"]["retrieval_schema"]} == {
        "top_k",
        "score_threshold",
    }
    module = load_component()
    assert issubclass(module.EagleRagEngine, KnowledgeEngine)
    assert module.EagleRagEngine.get_capabilities() == ["doc_ingestion", "doc_parsing"]


async def test_create_ingest_retrieve_delete(
    server: RunningServer, settings: dict[str, Any]
) -> None:
    engine, host = engine_for(settings)
    await engine.on_knowledge_base_create("lb-kb-1", settings)
    client = server.client(Authorization=f"Bearer {KEY}")
    assert client.get("/knowledge_bases/langbot-docs").status_code == 200

    result = await engine.ingest(
        upload(host, settings, "solar.md", SOLAR.encode(), "text/markdown", "lb-doc-1")
    )
    assert result.status == DocumentStatus.COMPLETED and result.chunks_created > 3
    report = await engine.ingest(
        upload(host, settings, "report.pdf", pdf_bytes(), "application/pdf", "lb-doc-2")
    )
    assert report.status == DocumentStatus.COMPLETED

    found = await engine.retrieve(
        RetrievalContext(
            query="scope of the audit",
            knowledge_base_id="lb-kb-1",
            creation_settings=settings,
            retrieval_settings={"top_k": 3},
        )
    )
    top = found.results[0]
    assert top.metadata["filename"] == "report.pdf" and top.metadata["page_nums"] == [2]
    assert top.metadata["path"].endswith("1.1 Scope")
    assert str(top.content[0]).startswith("This section covers the scope")
    assert 0.0 <= top.score <= 1.0 and top.distance == pytest.approx(1.0 - top.score)
    assert found.total_found >= len(found.results)

    strict = await engine.retrieve(
        RetrievalContext(
            query="scope of the audit",
            knowledge_base_id="lb-kb-1",
            creation_settings=settings,
            retrieval_settings={"top_k": 3, "score_threshold": 0.999},
        )
    )
    assert strict.results == [] and strict.total_found > 0

    assert await engine.delete_document("lb-kb-1", "lb-doc-1") is True
    names = [
        d["filename"] for d in client.get("/documents", params={"kb_name": "langbot-docs"}).json()
    ]
    assert names == ["report.pdf"]
    assert await engine.delete_document("lb-kb-1", "lb-doc-1") is False

    # A fresh process knows no KB settings: deletion falls back to the plugin config.
    fresh, _ = engine_for(settings)
    assert await fresh.delete_document("lb-kb-1", "lb-doc-2") is True


async def test_failures_are_reported(server: RunningServer, settings: dict[str, Any]) -> None:
    engine, host = engine_for(settings)
    await engine.on_knowledge_base_create("lb-kb-1", settings)
    broken = await engine.ingest(
        upload(host, settings, "x.pdf", b"not a pdf", "application/pdf", "lb-doc-9")
    )
    assert broken.status == DocumentStatus.FAILED and "application/pdf" in broken.error_message

    wrong = {**settings, "api_key": "wrong"}
    refused = await engine.ingest(upload(host, wrong, "a.txt", b"hello", "text/plain", "lb-doc-8"))
    assert refused.status == DocumentStatus.FAILED and "unknown API key" in refused.error_message
    with pytest.raises(RuntimeError, match="401") as unauthorized:
        await engine.retrieve(
            RetrievalContext(query="x", knowledge_base_id="lb-kb-1", creation_settings=wrong)
        )
    assert type(unauthorized.value).__name__ == "EagleRagError"
    with pytest.raises(RuntimeError, match="http"):
        await engine.on_knowledge_base_create("lb-kb-2", {**settings, "eagle_url": "ftp://x"})


async def test_original_file_name_when_the_host_passes_one(
    server: RunningServer, settings: dict[str, Any]
) -> None:
    """LangBot 4.11 names the file by its storage key; the user's name comes in ``extra``."""
    engine, host = engine_for(settings)
    await engine.on_knowledge_base_create("lb-kb-1", settings)
    key = "a3f9c2e1b7d84c0e9f6a5b4c3d2e1f0a.md"
    result = await engine.ingest(
        upload(
            host,
            settings,
            key,
            SOLAR.encode(),
            "text/markdown",
            "lb-doc-5",
            original_filename="Solar Handbook.md",
        )
    )
    assert result.status == DocumentStatus.COMPLETED
    assert result.metadata["filename"] == "Solar Handbook.md"
    client = server.client(Authorization=f"Bearer {KEY}")
    listed = client.get("/documents", params={"kb_name": "langbot-docs"}).json()
    document = next(d for d in listed if d["metadata"].get("langbot_document_id") == "lb-doc-5")
    assert document["filename"] == "Solar Handbook.md"
    assert document["metadata"]["langbot_storage_key"] == key
    found = await engine.retrieve(
        RetrievalContext(
            query="inverter copper", knowledge_base_id="lb-kb-1", creation_settings=settings
        )
    )
    assert found.results[0].metadata["filename"] == "Solar Handbook.md"
    assert await engine.delete_document("lb-kb-1", "lb-doc-5") is True


def ask(settings: dict[str, Any], query: str, **filters: Any) -> RetrievalContext:
    return RetrievalContext(
        query=query,
        knowledge_base_id="lb-kb-1",
        creation_settings=settings,
        retrieval_settings={"top_k": 5},
        filters=filters,
    )


def eagle_documents(server: RunningServer) -> list[dict[str, Any]]:
    client = server.client(Authorization=f"Bearer {KEY}")
    listed: list[dict[str, Any]] = client.get(
        "/documents", params={"kb_name": "langbot-docs"}
    ).json()
    return listed


async def test_same_bytes_twice_share_one_document_until_the_last_holder_goes(
    server: RunningServer, settings: dict[str, Any]
) -> None:
    """Eagle-RAG keeps one document per content: B is reported as sharing A's, deleting B keeps
    it for A, and it goes with the last LangBot document that holds it, also after a restart.
    (Before, deleting B answered False and deleting A removed the content B still claimed.)"""
    engine, host = engine_for(settings)
    await engine.on_knowledge_base_create("lb-kb-1", settings)
    pump = b"# Heat pump\nThe heat pump defrosts every 40 minutes.\n"
    a = await engine.ingest(upload(host, settings, "pump.md", pump, "text/markdown", "lb-a"))
    b = await engine.ingest(upload(host, settings, "copy.md", pump, "text/markdown", "lb-b"))
    assert a.status == b.status == DocumentStatus.COMPLETED and "dedup_hit" not in a.metadata
    assert b.metadata["dedup_hit"] is True and b.metadata["shared_with"] == "lb-a"
    assert b.metadata["eagle_document_id"] == a.metadata["eagle_document_id"]
    again = await engine.ingest(upload(host, settings, "pump.md", pump, "text/markdown", "lb-a"))
    assert "dedup_hit" not in again.metadata  # the same LangBot document again shares nothing

    assert await engine.delete_document("lb-kb-1", "lb-a") is True
    assert [d["filename"] for d in eagle_documents(server)] == ["pump.md"]  # B still holds it
    assert await engine.delete_document("lb-kb-1", "lb-a") is False  # released already
    assert [d["filename"] for d in eagle_documents(server)] == ["pump.md"]
    found = await engine.retrieve(ask(settings, "how often does it defrost", file_id="lb-b"))
    assert found.results and found.results[0].metadata["filename"] == "pump.md"
    gone = await engine.retrieve(ask(settings, "how often does it defrost", file_id="lb-a"))
    assert gone.results == []  # A was deleted in LangBot: its file filter finds nothing

    restarted, _ = engine_for(settings, host.storage)  # a new process, the same host storage
    assert await restarted.delete_document("lb-kb-1", "lb-b") is True
    assert eagle_documents(server) == [] and host.storage == {}

    # A document another client uploaded is LangBot's to share, never to delete.
    client = server.client(Authorization=f"Bearer {KEY}")
    files = {"file": ("theirs.md", pump, "text/markdown")}
    theirs = client.post("/ingest", data={"kb_name": "langbot-docs"}, files=files).json()
    assert client.get(f"/tasks/{theirs['job_id']}").status_code == 200
    mine = await engine.ingest(upload(host, settings, "mine.md", pump, "text/markdown", "lb-c"))
    assert mine.metadata["dedup_hit"] is True and mine.metadata["shared_with"] is None
    assert await engine.delete_document("lb-kb-1", "lb-c") is True
    assert [d["filename"] for d in eagle_documents(server)] == ["theirs.md"]
    client.delete(f"/documents/{theirs['document_id']}")


async def test_langbot_filters_are_translated_or_dropped_with_a_warning(
    server: RunningServer, settings: dict[str, Any]
) -> None:
    """A LangBot file filter keeps that file's passages; Eagle-RAG's own keys pass; any other
    key is dropped with a warning (it used to fail the retrieval: 400 unknown filter)."""
    engine, host = engine_for(settings)
    await engine.on_knowledge_base_create("lb-kb-1", settings)
    for name, data, mime, doc in (
        ("solar.md", SOLAR.encode(), "text/markdown", "lb-solar"),
        ("report.pdf", pdf_bytes(), "application/pdf", "lb-report"),
    ):
        done = await engine.ingest(upload(host, settings, name, data, mime, doc))
        assert done.status == DocumentStatus.COMPLETED
    query = "scope of the audit and the inverter"

    def files(found: Any) -> set[str]:
        return {r.metadata["filename"] for r in found.results}

    assert files(await engine.retrieve(ask(settings, query))) == {"solar.md", "report.pdf"}
    only = await engine.retrieve(ask(settings, query, file_id="lb-solar"))
    assert files(only) == {"solar.md"} and only.metadata["warnings"] == []
    listed = await engine.retrieve(ask(settings, query, document_id={"$in": ["lb-report"]}))
    assert files(listed) == {"report.pdf"}
    unknown = await engine.retrieve(ask(settings, query, file_id="not-a-langbot-document"))
    assert unknown.results == [] and unknown.total_found == 0
    eagle_own = await engine.retrieve(ask(settings, query, source_type="pdf"))
    assert files(eagle_own) == {"report.pdf"}
    dropped = await engine.retrieve(ask(settings, query, category="manuals"))
    assert files(dropped) == {"solar.md", "report.pdf"}
    assert ["'category' dropped" in w for w in dropped.metadata["warnings"]] == [True]
    for doc in ("lb-solar", "lb-report"):
        assert await engine.delete_document("lb-kb-1", doc) is True
