"""/health names each failing probe: a chat model whose host refuses connections degrades the
service (it still answers extractively), and the ingest queue reports itself."""

from __future__ import annotations

from pathlib import Path

from tests.api.server import running_server
from tests.servers import free_port


def test_a_down_chat_model_degrades_health_and_names_the_probe(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens here
    chat = {"provider": "openai", "base_url": f"http://127.0.0.1:{closed}/v1", "model": "m"}
    with running_server(tmp_path / "data", models={"chat": chat}) as server:
        answer = server.client().get("/health")
    body = answer.json()
    assert answer.status_code == 200 and body["status"] == "degraded"
    assert body["checks"]["chat"]["status"] == "down"
    assert "ConnectionRefusedError" in body["checks"]["chat"]["detail"]
    queue = body["checks"]["ingest_queue"]
    assert queue["status"] == "ok" and "workers" in queue["version"]
    assert {body["checks"][n]["status"] for n in ("metadata_db", "milvus")} == {"ok"}


def test_a_healthy_instance_reports_ok(tmp_path: Path) -> None:
    with running_server(tmp_path / "data") as server:
        body = server.client().get("/health").json()
    assert body["status"] == "ok" and "chat" not in body["checks"]
