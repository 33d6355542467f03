"""The ``eagle-rag`` entry point: process-wide allocator choices, made before libraries load.

Apache Arrow chooses its default memory pool once, when libarrow loads, from
``ARROW_DEFAULT_MEMORY_POOL``; importing the CLI loads it (pymilvus imports pandas, which
imports pyarrow), so the choice has to be made here, before that import. Milvus Lite runs in the
server process and allocates every segment, WAL batch and compaction through that pool. With
Arrow's default, its bundled mimalloc, the pages those short-lived buffers used stay resident:
measured in an embedded server (benchmarks/server_memory.py), Arrow had at most 8 MiB allocated
at once while mimalloc's reservation held 89 MiB, growing with every batch of uploads; with the
system allocator the same run grew a fraction of that (benchmarks/RESULTS.md, issue 14). Arrow's
speed does not matter here (a few MiB per flush), a server that keeps what it frees does.

An operator's own ``ARROW_DEFAULT_MEMORY_POOL`` (``mimalloc``, ``jemalloc``, ``system``) wins.
This module imports nothing but the standard library, so importing it loads no Arrow.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
DEFAULT_ARROW_POOL = "system"


def prepare_process(environ: MutableMapping[str, str] = os.environ) -> str:
    """Set the process's allocator defaults (unless already set); returns Arrow's pool name."""
    return environ.setdefault(ARROW_POOL_VARIABLE, DEFAULT_ARROW_POOL)


def main() -> Any:
    """The console script: allocator defaults first, then the Typer app."""
    prepare_process()
    from eagle_rag.cli import app  # loads libarrow: after prepare_process, never before

    return app()
