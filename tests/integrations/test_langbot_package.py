"""The LangBot package: ``lbp build`` (the real CLI) on the staged plugin, and the package
installed as LangBot would: unpacked, its requirements satisfied, its component importable with
the client it carries (not the repository's)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

PACKAGER = Path(__file__).resolve().parents[2] / "integrations" / "langbot" / "package.py"


def load_packager() -> object:
    spec = importlib.util.spec_from_file_location("langbot_package", PACKAGER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROBE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "component", "components/knowledge_engine/eagle_rag.py"
)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import eagle_rag.client
print(eagle_rag.client.__file__)
print(module.EagleRagEngine.get_capabilities())
"""


def test_lbp_build_and_install(tmp_path: Path) -> None:
    package: Path = load_packager().build(tmp_path / "dist")  # type: ignore[attr-defined]
    assert package.name == "eagle-rag-eagle-rag-0.1.0.lbpkg"
    with zipfile.ZipFile(package) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "installed")
    assert {
        "manifest.yaml",
        "main.py",
        "requirements.txt",
        "components/knowledge_engine/eagle_rag.py",
        "components/knowledge_engine/eagle_rag.yaml",
        "eagle_rag/errors.py",
        "eagle_rag/client/aio.py",
    } <= names
    assert not any(n.startswith(("eagle_rag/api", "eagle_rag/retrieval")) for n in names)

    installed = tmp_path / "installed"
    requirements = installed / "requirements.txt"
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--dry-run", "-q"]
    assert subprocess.run([*pip, "-r", str(requirements)], check=False).returncode == 0

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=installed,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    client_file, capabilities = probe.stdout.strip().splitlines()
    assert Path(client_file).resolve().is_relative_to(installed.resolve())
    assert capabilities == "['doc_ingestion', 'doc_parsing']"
