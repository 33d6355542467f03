"""The embedded commands while another process (a running server) holds the Milvus Lite data dir:
one clear line and exit 2, no traceback; doctor reports the store in use and exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle_rag.cli import app
from tests.lite_holder import lite_data_dir_held
from tests.servers import free_port

IN_USE = "in use by another process (a running `eagle-rag serve`?)"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A data dir held by a second process; no Eagle-RAG server answers at the configured port,
    so the commands fall back to the embedded store, as when the server listens elsewhere."""
    data = tmp_path_factory.mktemp("held") / "data"
    data.mkdir()
    with lite_data_dir_held(str(data / "milvus.db")):
        yield {"EAGLE_DATA_DIR": str(data), "EAGLE_RAG_SERVER__PORT": str(free_port())}


def _flat(text: str) -> str:
    """``text`` as one line: the console wraps long errors at its width."""
    return " ".join(text.split())


@pytest.mark.slow  # a CLI process of its own: ~5 s of imports and plugin loading
def test_kb_list_says_the_data_dir_is_in_use_without_a_traceback(env: dict[str, str]) -> None:
    # A real process, so stderr is exactly what a user sees (no test log capture in between).
    done = subprocess.run(
        [sys.executable, "-m", "eagle_rag", "kb", "list"],
        cwd=Path(__file__).parents[1],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert _flat(done.stderr).startswith("error: the Milvus Lite data dir is " + IN_USE)
    for noise in ("Traceback", "DataDirLockedError", "Open local milvus failed"):
        assert noise not in done.stderr


def test_ask_on_the_embedded_store_says_the_data_dir_is_in_use(
    env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    result = CliRunner().invoke(app, ["ask", "what is held?"], env=env)
    assert result.exit_code == 2, result.output
    assert IN_USE in _flat(result.stderr)
    assert "Traceback" not in result.output
    assert not [r for r in caplog.records if r.exc_info is not None]


def test_doctor_reports_the_store_in_use_and_stays_healthy(env: dict[str, str]) -> None:
    result = CliRunner().invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    milvus = next(b for b in report["backends"] if b["name"] == "milvus")
    assert (milvus["status"], milvus["detail"]) == (
        "in_use",
        "in use by another process (a running server?)",
    )
    assert [w for w in report["warnings"] if w.startswith("milvus: in use")]
    assert "Traceback" not in result.stderr


@pytest.mark.slow  # a server process of its own
def test_a_second_serve_on_the_data_dir_refuses_in_one_line(env: dict[str, str]) -> None:
    """Two servers on one data dir: the second one logged Starlette's 90-line traceback of its
    lifespan and exited 3, and its message suggested a --server option serve does not have."""
    done = subprocess.run(
        [sys.executable, "-m", "eagle_rag", "serve", "--port", str(free_port())],
        cwd=Path(__file__).parents[1],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    said = _flat(done.stderr)
    assert (
        "Eagle-RAG cannot start: the Milvus Lite data dir is " + IN_USE + ": stop it first" in said
    )
    assert "Traceback" not in done.stderr
    assert "Uvicorn running" not in done.stderr
