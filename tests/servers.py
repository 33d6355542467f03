"""Real servers the contract suites start on 127.0.0.1: an S3 API server and a Milvus server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(check: Callable[[], bool], process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        if check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not start within 60 s")


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def running(command: list[str], port: int, what: str, log: Path) -> Iterator[None]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait(lambda: _port_open(port), process, what)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@contextmanager
def s3_server(log_dir: Path) -> Iterator[str]:
    """``moto_server`` speaking the S3 API; yields its endpoint URL."""
    port = free_port()
    command = [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]
    with running(command, port, "moto_server", log_dir / "moto.log"):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def milvus_server(data_dir: Path, log_dir: Path) -> Iterator[str]:
    """``milvus-lite server``: a gRPC Milvus reached by URI, like a remote deployment."""
    port = free_port()
    command = [
        str(BIN / "milvus-lite"),
        "server",
        "--data-dir",
        str(data_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with running(command, port, "milvus-lite server", log_dir / "milvus.log"):
        yield f"http://127.0.0.1:{port}"
