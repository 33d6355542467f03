"""Build the LangBot plugin package (.lbpkg) with Eagle-RAG's client inside it.

The component talks to Eagle-RAG through ``eagle_rag.client``; LangBot installs only the
package's ``requirements.txt``, so the client (``eagle_rag/__init__.py``, ``errors.py`` and
``client/``, which need nothing but httpx) is copied next to ``main.py`` before ``lbp build``.

    python integrations/langbot/package.py --out dist        # → dist/eagle-rag-eagle-rag-<v>.lbpkg
    python integrations/langbot/package.py --stage /tmp/lb   # a folder to `lbp run` from
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PLUGIN = Path(__file__).resolve().parent
REPO = PLUGIN.parents[1]
CLIENT_FILES = ("__init__.py", "errors.py", "py.typed", "client")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "dist", ".env", "*.lbpkg", "package.py")


def stage(target: Path) -> Path:
    """The plugin folder plus the client, ready for ``lbp build`` or ``lbp run``."""
    shutil.copytree(PLUGIN, target, ignore=SKIP, dirs_exist_ok=True)
    vendored = target / "eagle_rag"
    vendored.mkdir(exist_ok=True)
    for name in CLIENT_FILES:
        source = REPO / "eagle_rag" / name
        if source.is_dir():
            shutil.copytree(source, vendored / name, ignore=SKIP, dirs_exist_ok=True)
        else:
            shutil.copy2(source, vendored / name)
    return target


def build(out: Path) -> Path:
    """``lbp build`` on a staged copy; returns the .lbpkg written under ``out``."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        staged = stage(Path(folder) / "eagle-rag")
        command = [sys.executable, "-c", "from langbot_plugin.cli import main; main()"]
        subprocess.run([*command, "build", "-o", str(out)], cwd=staged, check=True)
    built = sorted(out.glob("*.lbpkg"), key=lambda p: p.stat().st_mtime)
    if not built:
        raise SystemExit(f"lbp build wrote no .lbpkg into {out}")
    return built[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PLUGIN / "dist", help="where the .lbpkg goes")
    parser.add_argument("--stage", type=Path, help="only stage into this folder (for lbp run)")
    arguments = parser.parse_args()
    if arguments.stage:
        print(stage(arguments.stage))
    else:
        print(build(arguments.out))


if __name__ == "__main__":
    main()
