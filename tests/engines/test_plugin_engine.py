"""A plugin's engine without ``doc_parsing`` receives Eagle-RAG's ParseResult, and its hits
join a query over native KBs through RRF."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from eagle_rag.engines.base import DOC_INGESTION, EngineDocument, EngineIngestResult, EngineQuery
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.plugins.payloads import RetrievedHit
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.retrieval.conftest import GARDEN, SOLAR


class SectionStore:
    """A toy engine a plugin might ship: it keeps parsed sections and matches words."""

    name = "sections"
    description = "Keeps each parsed section; matches query words."
    capabilities = (DOC_INGESTION,)  # no doc_parsing: the host parses for it
    creation_schema = (SchemaItem("label", "string", default="notes"),)
    retrieval_schema = ()

    def __init__(self) -> None:
        self.received: list[EngineDocument] = []
        self.sections: list[tuple[str, str, str]] = []  # (document_id, heading, text)

    async def on_knowledge_base_create(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        pass

    async def on_knowledge_base_delete(self, kb_name: str, settings: Mapping[str, Any]) -> None:
        pass

    async def ingest(self, document: EngineDocument) -> EngineIngestResult:
        self.received.append(document)
        assert document.parsed is not None
        for section in document.parsed.sections:
            self.sections.append((document.document_id, section.heading or "", section.content))
        return EngineIngestResult(chunks=len(document.parsed.sections))

    async def delete_document(
        self, kb_name: str, remote_id: str, settings: Mapping[str, Any]
    ) -> bool:
        return True

    async def retrieve(self, query: EngineQuery) -> list[RetrievedHit]:
        words = set(query.text.lower().split())
        scored = sorted(
            (
                (len(words & set(text.lower().split())), i)
                for i, (_, _, text) in enumerate(self.sections)
            ),
            reverse=True,
        )
        return [
            RetrievedHit(
                chunk_id=f"sections:{i}",
                collection="sections",
                document_id=self.sections[i][0],
                kb_name=query.kb_name,
                text=self.sections[i][2],
                path=self.sections[i][1],
                score=float(score),
                source_chunk_id=f"sections:{i}",
                metadata={"type": "text"},
            )
            for score, i in scored[: query.top_k]
            if score
        ]


@pytest.fixture(scope="module")
def running(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningServer, SectionStore]]:
    with running_server(tmp_path_factory.mktemp("plugin-engine")) as server:
        engine = SectionStore()
        server.eagle.registries.knowledge_engines.register("sections", engine, owner="notes-plugin")
        yield server, engine


def test_the_engine_gets_the_parse_and_its_hits_are_fused(
    running: tuple[RunningServer, SectionStore],
) -> None:
    server, engine = running
    client: httpx.Client = server.client()
    assert client.post("/knowledge_bases", json={"kb_name": "native"}).status_code == 201
    created = client.post("/knowledge_bases", json={"kb_name": "plugin", "engine": "sections"})
    assert created.status_code == 201 and created.json()["creation_settings"] == {"label": "notes"}
    for kb, name, text in (("native", "solar.md", SOLAR), ("plugin", "garden.md", GARDEN)):
        job = client.post(
            "/ingest", data={"kb_name": kb}, files={"file": (name, text.encode())}
        ).json()
        assert wait_for_task(client, job["job_id"])["status"] == "completed"

    received = engine.received[0]
    assert received.filename == "garden.md" and received.mime_type == "text/markdown"
    assert received.parsed is not None
    assert [s.heading for s in received.parsed.sections if s.heading] == [
        "Garden Notes",
        "Tomatoes",
        "Compost",
    ]
    document = client.get(f"/documents/{received.document_id}").json()
    assert document["chunk_count"] == len(received.parsed.sections)
    assert "sections" in {e["name"] for e in client.get("/engines").json()}

    body = client.post(
        "/search",
        json={"query": "compost heap panels", "kb_names": ["native", "plugin"], "top_k": 10},
    ).json()
    assert {s["collection"] for s in body["sources"]["text"]} == {"eagle_text", "sections"}
