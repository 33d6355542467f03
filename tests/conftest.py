"""Fixtures shared by the whole suite: real settings, audit and bus objects in a temp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.settings import Settings, load_settings
from tests.databases import postgres_database
from tests.servers import milvus_server, s3_server


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    """The packaged settings on the embedded default, with data in a temp dir."""
    return load_settings({"EAGLE_DATA_DIR": str(data_dir)})


@pytest.fixture
def audit() -> PluginAudit:
    return PluginAudit(ring_cap=100)


@pytest.fixture
def bus(audit: PluginAudit) -> HookBus:
    return HookBus(audit)


# --- real servers, started once per test session on 127.0.0.1 ---------------------------------


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throw-away PostgreSQL database on 127.0.0.1:5432, dropped at the end."""
    with postgres_database() as url:
        yield url


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An S3 API server (moto_server)."""
    with s3_server(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Milvus gRPC server (``milvus-lite server``) reached by URI like a remote deployment."""
    base = tmp_path_factory.mktemp("milvus-server")
    with milvus_server(base / "data", base) as uri:
        yield uri
