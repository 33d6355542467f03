"""One real server with API keys and an ingested corpus per module, for the adapter tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eagle_rag.client import EagleClient
from tests.api.server import RunningServer, running_server
from tests.ingest.documents import pdf_bytes
from tests.retrieval.conftest import GARDEN, SOLAR

KEY = "adapter-key"
SCOPED_KEY = "garden-only"
SOLAR_METADATA = {"year": 2021, "team": "ops"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [
        {"name": "admin", "key": KEY},
        {"name": "garden", "key": SCOPED_KEY, "kb_names": ["garden"]},
    ]
    with running_server(tmp_path_factory.mktemp("adapters"), server={"api_keys": keys}) as running:
        yield running


@pytest.fixture(scope="module")
def corpus(server: RunningServer) -> dict[str, str]:
    """KB ``energy`` (solar.md tagged ``howto``, report.pdf) and KB ``garden`` (garden.md):
    name → document id."""
    with EagleClient(server.url, api_key=KEY) as client:
        client.create_knowledge_base("energy")
        client.create_knowledge_base("garden")
        jobs = {
            "solar.md": client.ingest(
                "energy",
                SOLAR.encode(),
                filename="solar.md",
                metadata=SOLAR_METADATA,
                tags=["howto"],
            ),
            "report.pdf": client.ingest(
                "energy", pdf_bytes(), filename="report.pdf", metadata={"year": 2023}
            ),
            "garden.md": client.ingest("garden", GARDEN.encode(), filename="garden.md"),
        }
        for job in jobs.values():
            assert client.wait_for_task(job.job_id, timeout_s=120).status == "completed"
    return {name: job.document_id for name, job in jobs.items()}
