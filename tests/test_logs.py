"""Structured logs: JSON lines with request and task ids; configured secrets never reach them."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import fastmcp  # noqa: F401  (installs its handlers on import, before the fixture)
import httpx
import pymilvus  # noqa: F401  (the same)
import pytest

from eagle_rag.logs import bound, configure_logging, redact
from eagle_rag.settings import load_settings
from tests.servers import free_port

SECRETS = {
    "EAGLE_EMBEDDING_API_KEY": "sk-embed-5ecret-0001",
    "EAGLE_CHAT_API_KEY": "sk-chat-5ecret-0002",
    "EAGLE_RERANK_API_KEY": "rr-5ecret-0003",
    "S3_SECRET_ACCESS_KEY": "s3-5ecret-0004",
    "MILVUS_TOKEN": "root:milvus-5ecret-0005",
    "AGENT_KEY": "agent-5ecret-0006",
}
DB_PASSWORD = "pg-5ecret-0007"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    settings = load_settings(
        {"EAGLE_LOG_FORMAT": "json", **SECRETS},
        overrides={"server": {"api_keys": [{"name": "a", "key": SECRETS["AGENT_KEY"]}]}},
    )
    configure_logging(settings, stream=stream)
    yield stream
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_carry_ids_and_extra_fields(captured: io.StringIO) -> None:
    log = logging.getLogger("eagle_rag.test")
    with bound(request="req-1", task="task-9"):
        log.info("ingested %d chunks", 3, extra={"kb_name": "handbook"})
    log.warning("outside any request")
    first, second = _lines(captured)
    assert first["message"] == "ingested 3 chunks"
    assert first["request_id"] == "req-1" and first["task_id"] == "task-9"
    assert first["kb_name"] == "handbook" and first["level"] == "info"
    assert "request_id" not in second and second["level"] == "warning"
    # uvicorn's ANSI-coloured copy of its message (its records carry it) is not a field.
    colour = {"color_message": "Uvicorn running on \x1b[1m%s\x1b[0m"}
    log.info("Uvicorn running on %s", "x", extra=colour)
    served = _lines(captured)[-1]
    assert served["message"] == "Uvicorn running on x" and "color_message" not in served


def test_secrets_are_redacted_in_messages_arguments_extras_and_tracebacks(
    captured: io.StringIO,
) -> None:
    log = logging.getLogger("eagle_rag.test")
    log.info("calling with key %s", SECRETS["EAGLE_EMBEDDING_API_KEY"])
    log.info("db at postgresql+psycopg://eagle:%s@db:5432/eagle", DB_PASSWORD)
    log.info("header", extra={"auth": f"Bearer {SECRETS['AGENT_KEY']}"})
    try:
        raise RuntimeError(f"S3 refused {SECRETS['S3_SECRET_ACCESS_KEY']}")
    except RuntimeError:
        log.exception("upload failed")
    text = captured.getvalue()
    for secret in [*SECRETS.values(), DB_PASSWORD]:
        assert secret not in text
    assert text.count("********") >= 4


def test_redact_masks_url_passwords_and_bearer_tokens() -> None:
    assert redact("redis://:pw1234@h:6379/0", []) == "redis://:********@h:6379/0"
    assert (
        redact("to tcp://root:pa/ss@h:19530 failed", []) == "to tcp://root:********@h:19530 failed"
    )
    assert redact("Authorization: Bearer abc.def", []) == "Authorization: Bearer ********"
    assert redact("no secrets here", ["zzzz"]) == "no secrets here"


@pytest.mark.slow
def test_a_served_run_with_keys_set_logs_json_and_no_secret(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        **SECRETS,
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_LOG_FORMAT": "json",
        "EAGLE_RAG_SERVER__API_KEYS": f'[{{name: agent, key: "{SECRETS["AGENT_KEY"]}"}}]',
    }
    log = tmp_path / "serve.log"
    command = [sys.executable, "-c", "from eagle_rag.cli import app; app()", "serve"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {SECRETS['AGENT_KEY']}"}
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/health", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        with httpx.Client(base_url=url, timeout=30) as client:
            client.post("/knowledge_bases", json={"kb_name": "logs"}, headers=auth)
            job = client.post(
                "/ingest",
                data={"kb_name": "logs"},
                files={"file": ("a.md", b"# A\n\nSome text.", "text/plain")},
                headers={**auth, "X-Request-ID": "upload-1"},
            ).json()
            client.get("/knowledge_bases", headers={"Authorization": "Bearer wrong-key-123"})
            client.get(f"/tasks/{job['job_id']}", headers=auth)
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text()
    for secret in SECRETS.values():
        assert secret not in text, secret
    entries = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    access = [e for e in entries if e["logger"] == "eagle_rag.access"]
    assert any(e.get("request_id") == "upload-1" and e["route"] == "/ingest" for e in access)
    assert any(e["status"] == 401 for e in access)
    # Every line the process wrote is JSON (uvicorn's own lines included).
    assert len(entries) == len([line for line in text.splitlines() if line.strip()])


def test_pymilvus_records_go_through_our_handler(captured: io.StringIO) -> None:
    """pymilvus installs its own stderr handler and stops propagation: its warnings were
    plain-text lines in a JSON log, and their secrets were not redacted."""
    logging.getLogger("pymilvus.client").warning("retrying with %s", SECRETS["MILVUS_TOKEN"])
    [line] = _lines(captured)
    assert line["logger"] == "pymilvus.client" and line["level"] == "warning"
    assert SECRETS["MILVUS_TOKEN"] not in str(line["message"])


def test_set_up_chatter_is_left_out_at_info(captured: io.StringIO) -> None:
    logging.getLogger("faiss.loader").info("Could not load library: ModuleNotFoundError(...)")
    logging.getLogger("eagle_rag.test").info("kept")
    assert [line["message"] for line in _lines(captured)] == ["kept"]


@pytest.mark.asyncio
async def test_a_tool_callers_mistake_is_one_info_line_not_an_error_with_a_traceback(
    captured: io.StringIO,
) -> None:
    """FastMCP logs whatever a tool raises at ERROR with its traceback: an agent's unknown KB
    wrote 40 lines into the operator's log. A real failure keeps its traceback."""
    from fastmcp import Client, FastMCP
    from fastmcp.exceptions import ToolError

    from eagle_rag.errors import NotFoundError

    server = FastMCP("probe")

    @server.tool
    def lookup(kb: str) -> str:
        if kb == "broken":
            raise RuntimeError("the disk is gone")
        raise NotFoundError(f"knowledge base {kb!r} not found", kb_name=kb)

    async with Client(server) as client:
        for kb in ("ghost", "broken"):
            with pytest.raises(ToolError):
                await client.call_tool("lookup", {"kb": kb})
    mistake, failure = [line for line in _lines(captured) if "lookup" in str(line["message"])]
    assert mistake["level"] == "info" and "exception" not in mistake
    assert "NotFoundError: knowledge base 'ghost' not found" in str(mistake["message"])
    assert failure["level"] == "error" and "the disk is gone" in str(failure["exception"])


def test_redact_masks_secret_query_parameters() -> None:
    said = redact("POST https://h/v1/rerank?key=K1&model=m failed", ())
    assert said == "POST https://h/v1/rerank?key=********&model=m failed"
