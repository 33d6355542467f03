"""Milvus taken down under a running API and brought back: a request that needs it fails fast
with a 503 that names the backend and carries Retry-After, /health says ``down`` naming the
probe, and everything works again within seconds of Milvus's return, with no restart of the
API. (``/search`` itself answers 200 with a failed step while Milvus is down: the retrieval
service skips failed plans -- issue 15's code.)"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.api.server import running_server, wait_for_task
from tests.servers import BIN, _port_open, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _milvus(data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [str(BIN / "milvus-lite"), "server", "--data-dir", str(data)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not _port_open(port):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_milvus_down_is_a_fast_503_and_searches_recover_when_it_returns(tmp_path: Path) -> None:
    port = free_port()
    milvus_data, log = tmp_path / "milvus", tmp_path / "milvus.log"
    milvus = _milvus(milvus_data, port, log)
    try:
        with running_server(
            tmp_path / "data", milvus={"uri": f"http://127.0.0.1:{port}", "timeout_s": 3}
        ) as server:
            client = server.client()
            assert client.post("/knowledge_bases", json={"kb_name": "outage"}).status_code == 201
            upload = client.post(
                "/ingest",
                data={"kb_name": "outage"},
                files={"file": ("a.md", b"# Outage\n\nThe numbat survives outages.", "text/md")},
            )
            assert wait_for_task(client, upload.json()["job_id"])["status"] == "completed"
            query = {"query": "numbat", "kb_name": "outage", "mode": "sparse"}
            assert client.post("/search", json=query).json()["sources"]["text"]

            chunks = f"/documents/{upload.json()['document_id']}/chunks"
            _stop(milvus)
            started = time.monotonic()
            down = client.get(chunks)
            elapsed = time.monotonic() - started
            assert down.status_code == 503, down.text
            assert down.json()["code"] == "backend_unavailable"
            assert down.json()["details"]["backend"] == "milvus"
            assert down.headers["retry-after"].isdigit()
            assert elapsed < 15  # fails fast: the client timeout, not a hang
            health = client.get("/health")
            assert health.status_code == 503 and health.json()["status"] == "down"
            assert health.json()["checks"]["milvus"]["status"] == "down"

            milvus = _milvus(milvus_data, port, log)
            back = time.monotonic()
            while True:
                answer = client.get(chunks)
                if answer.status_code == 200:
                    break
                assert answer.status_code == 503, answer.text
                assert time.monotonic() - back < 30, answer.text
                time.sleep(0.5)
            recovered_s = time.monotonic() - back
            assert answer.json()["count"] > 0
            assert client.post("/search", json=query).json()["sources"]["text"]
            assert client.get("/health").json()["checks"]["milvus"]["status"] == "ok"
            assert recovered_s < 30, recovered_s
    finally:
        if milvus.poll() is None:
            _stop(milvus)
