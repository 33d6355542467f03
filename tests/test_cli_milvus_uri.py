"""A mistyped or unusable MILVUS_URI: a settings error, exit 2, its password masked everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle_rag.cli import app

runner = CliRunner()
PASSWORD = "MILVUSPW"


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow  # a CLI process of its own: pymilvus must be imported with MILVUS_URI set
@pytest.mark.parametrize("uri", [f"https//root:{PASSWORD}@127.0.0.1:19530", "relative/milvus.db"])
def test_pymilvus_does_not_parse_milvus_uri_on_import(tmp_path: Path, uri: str) -> None:
    # pymilvus parsed MILVUS_URI when imported: a typo, or a Lite path, was a traceback on every
    # command that quoted the URI, password included.
    done = subprocess.run(
        [sys.executable, "-m", "eagle_rag", "kb", "list"],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).parents[1]),
            "EAGLE_DATA_DIR": str(tmp_path / "data"),
            "MILVUS_URI": uri,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr and PASSWORD not in done.stderr + done.stdout
    if uri.endswith(".db"):  # a Lite path is a valid milvus.uri
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "relative" / "milvus.db").exists()
    else:
        assert done.returncode == 2
        assert _flat(done.stderr).startswith("error: milvus.uri 'https//root:********@127.0")
        assert not (tmp_path / "https").exists()  # no Lite folder made for the typo


@pytest.mark.slow  # a CLI process of its own, started beside a .env file
@pytest.mark.parametrize("in_environment", [True, False])
def test_a_dotenv_file_does_not_bring_milvus_uri_back_for_pymilvus(
    tmp_path: Path, in_environment: bool
) -> None:
    """pymilvus loads a .env file when imported: with MILVUS_URI hidden by removing it, the
    file put it back and the import failed again ("Illegal uri")."""
    (tmp_path / ".env").write_text("MILVUS_URI=relative/milvus.db\n")
    env = {k: v for k, v in os.environ.items() if k != "MILVUS_URI"}
    if in_environment:
        env["MILVUS_URI"] = "relative/milvus.db"
    # Run as "-c": dotenv then looks for .env from the working directory, as it does for the
    # project's root beside .venv when the CLI runs.
    shown = "import os, eagle_rag.index; print(repr(os.environ.get('MILVUS_URI')))"
    done = subprocess.run(
        [sys.executable, "-c", shown],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).parents[1])},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # As it was before the import: the environment's value, or none.
    assert done.stdout.strip() == ("'relative/milvus.db'" if in_environment else "None")


@pytest.mark.parametrize(
    "uri", [f"ftp://root:{PASSWORD}@127.0.0.1:19530", f"https//root:{PASSWORD}@127.0.0.1:1"]
)
def test_an_unusable_milvus_uri_is_a_settings_error_with_its_password_masked(
    tmp_path: Path, uri: str
) -> None:
    env = {"EAGLE_DATA_DIR": str(tmp_path / "data"), "MILVUS_URI": uri}
    result = runner.invoke(app, ["kb", "list"], env=env)
    assert result.exit_code == 2, result.output
    assert _flat(result.stderr).startswith("error: milvus.uri '")
    assert PASSWORD not in result.output
    for args in (["doctor"], ["doctor", "--json"]):
        doctor = runner.invoke(app, args, env=env)
        assert doctor.exit_code == 1
        assert PASSWORD not in doctor.output
    report = json.loads(runner.invoke(app, ["doctor", "--json"], env=env).stdout)
    [milvus] = [b for b in report["backends"] if b["name"] == "milvus"]
    assert milvus["status"] == "down" and "milvus.uri" in milvus["detail"]
    assert "********" in milvus["target"] and "********" in report["settings"]["milvus"]["uri"]


def test_an_unreachable_server_is_unavailable_with_its_password_masked(tmp_path: Path) -> None:
    env = {
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "MILVUS_URI": f"http://root:{PASSWORD}@127.0.0.1:1",
    }
    result = runner.invoke(app, ["kb", "list"], env=env)
    assert result.exit_code == 2, result.output
    assert _flat(result.stderr).startswith("error: Milvus is unavailable")
    assert PASSWORD not in result.output
