"""The Celery worker imports the modules plugins name in CELERY_TASKS as it starts, and a name
that cannot be imported stops it, naming the plugin (docs/hooks.md). Run in a child process:
Celery's loader starts the worker the way ``celery -A eagle_rag.ingest.worker worker`` does,
without a broker (the imports come before the first connection)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.plugins.celery_plugin"
TASK_MODULE = "tests.plugins.celery_task_module"
# What the worker does first on start (celery/worker/worker.py: loader.init_worker).
START_WORKER_LOADER = (
    "import eagle_rag.ingest.worker as w; w.celery.loader.init_worker(); "
    f"print(sorted(w.celery.conf.imports)); print({TASK_MODULE + '.echo'!r} in w.celery.tasks)"
)


def _start_worker_loader(tmp_path: Path, modules: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_RAG_PLUGINS__ENABLED": f"[eagle_rag.plugins.core_defaults, {PLUGIN}]",
        "EAGLE_RAG_PLUGINS__DEFAULT_NAMESPACE": "tasks",
        "EAGLE_RAG_PLUGINS__OPTIONS__TASKS__MODULES": modules,
    }
    command = [sys.executable, "-c", START_WORKER_LOADER]
    return subprocess.run(
        command, env=environment, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_the_worker_imports_the_plugins_task_modules(tmp_path: Path) -> None:
    started = _start_worker_loader(tmp_path, f"[{TASK_MODULE}]")
    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stdout.splitlines()[-2:] == [f"['{TASK_MODULE}']", "True"]


def test_a_task_module_that_cannot_be_imported_stops_the_worker(tmp_path: Path) -> None:
    started = _start_worker_loader(tmp_path, "[tests.plugins.no_such_tasks]")
    assert started.returncode != 0
    assert "PluginLoadError" in started.stderr
    assert "'tests.plugins.no_such_tasks' (named by plugin tasks)" in started.stderr
