"""The data dir probe (doctor, /health): writable, and with room to write."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from eagle_rag import probes
from eagle_rag.settings import load_settings


def _probe(data_dir: Path) -> probes.ProbeResult:
    return probes.probe_data_dir(load_settings({"EAGLE_DATA_DIR": str(data_dir)}))


def test_the_data_dir_reports_its_free_space(tmp_path: Path) -> None:
    result = _probe(tmp_path / "data")
    assert result.status == "ok" and result.version.endswith(" free")


def test_a_full_filesystem_is_down_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk still takes an empty probe file: /health said "ok" while every upload
    failed with "No space left on device"."""
    usage = shutil.disk_usage(tmp_path)

    def full(path: Any) -> Any:
        return usage._replace(free=4096)

    monkeypatch.setattr(probes.shutil, "disk_usage", full)
    result = _probe(tmp_path / "data")
    assert result.status == "down"
    assert result.detail.startswith("DiskFullError: only 4.0 KiB free on its filesystem")


def test_a_down_probe_masks_a_password_its_error_quotes() -> None:
    def check() -> str:
        raise ConnectionError("cannot reach postgresql://eagle:s3cretpw@db:5432/eagle")

    result = probes._timed("metadata_db", "db", check)
    assert result.status == "down"
    assert "s3cretpw" not in result.detail and "eagle:********@db" in result.detail
