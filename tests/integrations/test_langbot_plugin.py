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
    """Stands in for LangBot: its file storage and the plugin's installation config."""

    plugin_runtime_handler = None

    def __init__(self, config: dict[str, Any]) -> None:
        self.files: dict[str, bytes] = {}
        self.config = config

    async def get_knowledge_file_stream(self, storage_path: str) -> bytes:
        return self.files[storage_path]

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


def engine_for(settings: dict[str, Any]) -> tuple[Any, Host]:
    module = load_component()
    engine = module.EagleRagEngine()
    host = Host({"eagle_url": settings["eagle_url"], "api_key": settings["api_key"]})
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
