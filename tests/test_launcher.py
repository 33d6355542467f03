"""The ``eagle-rag`` entry point chooses Arrow's memory pool before libarrow loads.

Each check runs a fresh interpreter: libarrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when it
loads, so only a new process shows which pool a given start-up order ends with.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks.crash_recovery import free_port, serve, server_env
from eagle_rag.cli.server import arrow_pool_warning
from eagle_rag.launcher import ARROW_POOL_VARIABLE, DEFAULT_ARROW_POOL, prepare_process

POOL_AFTER_CLI = "import eagle_rag.cli, pyarrow; print(pyarrow.default_memory_pool().backend_name)"


def python(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_the_launcher_puts_arrow_on_the_system_allocator() -> None:
    code = "from eagle_rag.launcher import prepare_process; prepare_process(); " + POOL_AFTER_CLI
    assert python(code) == DEFAULT_ARROW_POOL == "system"


def test_the_choice_must_come_before_the_cli_is_imported() -> None:
    # Why the launcher exists: importing the CLI loads libarrow (pymilvus -> pandas -> pyarrow),
    # and the pool is fixed from then on, whatever the environment says later.
    late = POOL_AFTER_CLI.replace(
        "import eagle_rag.cli, pyarrow;",
        "import eagle_rag.cli, pyarrow; from eagle_rag.launcher import prepare_process; "
        "prepare_process();",
    )
    assert python(late) == "mimalloc"


def test_an_operators_own_pool_wins() -> None:
    code = "from eagle_rag.launcher import prepare_process; prepare_process(); " + POOL_AFTER_CLI
    assert python(code, ARROW_DEFAULT_MEMORY_POOL="jemalloc") == "jemalloc"
    environ = {ARROW_POOL_VARIABLE: "mimalloc"}
    assert prepare_process(environ) == "mimalloc"
    assert environ == {ARROW_POOL_VARIABLE: "mimalloc"}


def test_importing_the_launcher_loads_no_arrow() -> None:
    code = "import sys, eagle_rag.launcher; print('pyarrow' in sys.modules)"
    assert python(code) == "False"


def test_python_dash_m_eagle_rag_runs_the_cli_through_the_launcher() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "eagle_rag", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "serve" in done.stdout


def test_serve_started_by_the_entry_point_runs_arrow_on_the_system_allocator(
    tmp_path: Path,
) -> None:
    # The harness starts ``eagle-rag serve`` exactly as the console script does (CLI_ENTRY).
    data_dir, log = tmp_path / "data", tmp_path / "serve.log"
    env = {k: v for k, v in server_env(data_dir).items() if k != ARROW_POOL_VARIABLE}
    with serve(data_dir, free_port(), log, env, startup_s=300):
        started = log.read_text()
    assert "Arrow memory pool system" in started, started[-2000:]


def test_serve_warns_when_nobody_chose_the_pool() -> None:
    warning = arrow_pool_warning("mimalloc", {})
    assert warning and "ARROW_DEFAULT_MEMORY_POOL=system" in warning
    assert arrow_pool_warning("mimalloc", {ARROW_POOL_VARIABLE: "mimalloc"}) is None  # chosen
    assert arrow_pool_warning("system", {ARROW_POOL_VARIABLE: "system"}) is None
