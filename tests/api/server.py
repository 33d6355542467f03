"""A real uvicorn server running the Eagle-RAG ASGI app on 127.0.0.1, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from eagle_rag.api.app import create_app
from eagle_rag.settings import Settings, load_settings


@dataclass(frozen=True)
class RunningServer:
    url: str
    settings: Settings
    api: Any

    @property
    def eagle(self) -> Any:
        return self.api.state.eagle

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_settings(data_dir: Path, port: int, **overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "server": {"port": port},
        "ingest": {"chunk_size": 48, "chunk_overlap": 4},
    }
    for section, values in overrides.items():
        base.setdefault(section, {}).update(values)
    return load_settings(
        {"EAGLE_DATA_DIR": str(data_dir), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides=base,
    )


@contextmanager
def running_server(data_dir: Path, **overrides: Any) -> Iterator[RunningServer]:
    port = free_port()
    settings = server_settings(data_dir, port, **overrides)
    api = create_app(settings)
    server = uvicorn.Server(
        uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield RunningServer(f"http://127.0.0.1:{port}", settings, api)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def wait_for_task(client: httpx.Client, job_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task: dict[str, Any] = client.get(f"/tasks/{job_id}").json()
        if task["status"] in ("completed", "failed"):
            return task
        time.sleep(0.1)
    raise TimeoutError(f"task {job_id} did not finish")


def sse_events(response: httpx.Response) -> Iterator[tuple[str, str]]:
    """(event, data) pairs as they arrive on a streaming response."""
    name, data = "message", []
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            yield name, "\n".join(data)
            name, data = "message", []
