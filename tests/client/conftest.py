"""A real server with an API key, and KBs with ingested documents, for the client tests.

Module-scoped: two apps must not overlap in one process (the core plugin's services are bound
per process while an app runs), and test_retries starts its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle_rag.client import EagleClient
from tests.api.server import RunningServer, running_server
from tests.ingest.documents import pdf_bytes
from tests.retrieval.conftest import GARDEN, SOLAR

KEY = "client-key"
SCOPED_KEY = "garden-only"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [
        {"name": "admin", "key": KEY},
        {"name": "garden", "key": SCOPED_KEY, "kb_names": ["garden"]},
    ]
    with running_server(tmp_path_factory.mktemp("client"), server={"api_keys": keys}) as running:
        yield running


@pytest.fixture(scope="module")
def corpus(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """KB ``energy`` (solar.md, report.pdf) and KB ``garden`` (garden.md): name → document id."""
    folder = tmp_path_factory.mktemp("files")
    (folder / "solar.md").write_text(SOLAR)
    ids: dict[str, str] = {}
    with EagleClient(server.url, api_key=KEY) as client:
        client.create_knowledge_base("energy", description="solar")
        client.create_knowledge_base("garden")
        jobs = {
            "solar.md": client.ingest("energy", Path(folder / "solar.md"), tags=["howto"]),
            "report.pdf": client.ingest("energy", pdf_bytes(), filename="report.pdf"),
            "garden.md": client.ingest("garden", GARDEN.encode(), filename="garden.md"),
        }
        for name, job in jobs.items():
            assert client.wait_for_task(job.job_id, timeout_s=120).status == "completed"
            ids[name] = job.document_id
    return ids
