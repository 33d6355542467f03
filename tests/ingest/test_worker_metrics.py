"""Bad worker metrics settings get a clear error and change nothing (the endpoint itself is
tested with a real Celery worker in test_celery_metrics.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import httpx
import pytest
from prometheus_client import values

from eagle_rag.errors import SettingsError
from eagle_rag.ingest.worker_metrics import MULTIPROC_VARIABLE, WorkerMetrics, enable
from eagle_rag.settings import WorkerSettings, load_settings


def test_metrics_are_off_by_default_and_the_port_is_checked() -> None:
    assert load_settings({}).worker.metrics_port == 0
    assert enable(WorkerSettings()) is None
    with pytest.raises(SettingsError, match=r"worker\.metrics_port"):
        load_settings({"EAGLE_WORKER_METRICS_PORT": "70000"})
    with pytest.raises(SettingsError, match=r"worker\.metrics_port"):
        load_settings({"EAGLE_RAG_WORKER__METRICS_PORT": "-1"})


def test_a_taken_port_is_named_in_the_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = WorkerSettings(metrics_port=port)
        metrics = WorkerMetrics(config, tmp_path, temporary=False)
        with pytest.raises(SettingsError, match=rf"127\.0\.0\.1:{port}.*its own port"):
            metrics.serve()
    assert metrics.server is None


def test_an_unusable_directory_is_refused_before_the_process_switches_mode(
    tmp_path: Path,
) -> None:
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("x")
    before = values.ValueClass
    with pytest.raises(SettingsError, match=r"worker\.metrics_dir.*not-a-directory"):
        enable(WorkerSettings(metrics_port=9, metrics_dir=str(a_file)))
    assert values.ValueClass is before  # this process still counts in memory
    assert MULTIPROC_VARIABLE not in os.environ


def test_the_endpoint_serves_the_directory_and_stops(tmp_path: Path) -> None:
    """Serving and stopping (what the worker's main process does), on an empty directory."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics = WorkerMetrics(WorkerSettings(metrics_port=port), tmp_path / "m", temporary=True)
    metrics.directory.mkdir()
    metrics.serve()
    try:
        response = httpx.get(f"http://127.0.0.1:{metrics.port}/metrics", timeout=5)
        assert response.status_code == 200
        metrics.forget_listener()  # the serving process itself: keeps its socket
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
    finally:
        metrics.stop()
    assert not metrics.directory.exists()  # a temporary directory goes with the worker
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
