"""Another process holding a Milvus Lite data dir, as a running `eagle-rag serve` does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Opens the data dir the way the server does (pymilvus starts the embedded Lite server, which
# takes the dir's lock), says so, and holds it until its stdin closes.
_HOLD = """
import sys
from pymilvus import MilvusClient
client = MilvusClient(uri=sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def lite_data_dir_held(uri: str) -> Iterator[None]:
    """``uri``'s Milvus Lite data dir held by a second process for the duration."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD, uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "held":
                raise RuntimeError(f"the holder did not open {uri} (exit {process.wait()})")
            yield
        finally:
            process.kill()  # the OS releases the lock with the process
