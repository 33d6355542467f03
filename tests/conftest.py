"""Fixtures shared by the whole suite: real settings, audit and bus objects in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.settings import Settings, load_settings


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
