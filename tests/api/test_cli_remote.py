"""The CLI against a running server: kb, ingest, ask and search go through REST."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle_rag.cli import app
from tests.api.server import RunningServer, running_server
from tests.http_fakes import json_answer, serve
from tests.ingest import documents as docs

runner = CliRunner()
KEY = "cli-key-1"


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(
        tmp_path_factory.mktemp("cli-remote"), server={"api_keys": [{"name": "c", "key": KEY}]}
    ) as running:
        yield running


@pytest.fixture
def env(remote: RunningServer, tmp_path: Path) -> dict[str, str]:
    # A data dir of its own: the commands must not open a store, only talk to the server.
    return {
        "EAGLE_DATA_DIR": str(tmp_path / "unused"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_SERVER_URL": remote.url,
        "EAGLE_API_KEY": KEY,
    }


def test_kb_and_ingest_over_http(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(docs.MARKDOWN)
    (tmp_path / "broken.pdf").write_bytes(b"not a pdf at all")
    created = runner.invoke(app, ["kb", "create", "remote-kb", "--chunk-size", "64"], env=env)
    assert created.exit_code == 0, created.output
    duplicate = runner.invoke(app, ["kb", "create", "remote-kb"], env=env)
    assert duplicate.exit_code == 2 and "already exists" in duplicate.output

    result = runner.invoke(
        app,
        [
            "ingest",
            str(tmp_path / "guide.md"),
            str(tmp_path / "broken.pdf"),
            "--kb",
            "remote-kb",
            "--json",
        ],
        env=env,
    )
    assert result.exit_code == 1  # the broken file is refused by the server
    outcomes = {Path(o["path"]).name: o for o in json.loads(result.stdout)}
    assert outcomes["guide.md"]["status"] == "completed" and outcomes["guide.md"]["chunks"] > 0
    assert outcomes["broken.pdf"]["status"] == "refused"

    shown = json.loads(runner.invoke(app, ["kb", "show", "remote-kb", "--json"], env=env).stdout)
    assert shown["creation_settings"] == {"chunk_size": 64, "chunk_overlap": 4}  # default filled
    assert [d["filename"] for d in shown["document_list"]] == ["guide.md"]
    listed = json.loads(runner.invoke(app, ["kb", "list", "--json"], env=env).stdout)
    assert [k["kb_name"] for k in listed] == ["remote-kb"]

    found = runner.invoke(app, ["search", "guide", "--kb", "remote-kb", "--json"], env=env)
    assert json.loads(found.stdout)["sources"]["text"][0]["filename"] == "guide.md"
    asked = runner.invoke(app, ["ask", "What does the guide cover?", "--kb", "remote-kb"], env=env)
    assert asked.exit_code == 0, asked.output
    assert "[1]" in asked.stdout and "guide.md" in asked.stdout

    deleted = runner.invoke(app, ["kb", "delete", "remote-kb", "--yes"], env=env)
    assert deleted.exit_code == 0 and "1 documents" in deleted.stdout
    assert not (tmp_path / "unused").exists()  # no embedded store was opened


def test_remote_errors_are_reported(env: dict[str, str]) -> None:
    missing = runner.invoke(app, ["kb", "show", "nope"], env=env)
    assert missing.exit_code == 2 and "not found" in missing.output
    wrong_key = runner.invoke(app, ["kb", "list"], env={**env, "EAGLE_API_KEY": "bad"})
    assert wrong_key.exit_code == 2 and "unknown API key" in wrong_key.output
    asked = runner.invoke(app, ["ask", "x", "--kb", "nope"], env=env)
    assert asked.exit_code == 2 and "not found" in asked.output
    none = runner.invoke(app, ["ask", "x", "--top-n", "0"], env=env)  # was the default (3)
    assert none.exit_code == 2 and "top_n" in none.output
    found = runner.invoke(app, ["search", "x", "--kb", "nope"], env=env)
    assert found.exit_code == 2 and "not found" in found.output


def test_remote_search_goes_through_the_client(tmp_path: Path) -> None:
    """A proxy in front of the server answers 503 once: the CLI retries after its Retry-After,
    as eagle_rag.client does, and sends the REST body the client builds."""
    answers = [
        json_answer(
            503, {"code": "backend_unavailable", "message": "warming up"}, **{"Retry-After": "0"}
        )
    ]
    empty = {"query": "q", "kb_names": ["a"], "sources": {"text": [], "image": []}, "steps": []}

    def handler(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        return answers.pop(0) if answers else json_answer(200, empty)

    env = {"EAGLE_DATA_DIR": str(tmp_path / "unused"), "EAGLE_API_KEY": "proxy-key"}
    with serve(handler) as (url, recorded):
        found = runner.invoke(
            app, ["search", "q", "--kb", "a", "--top-k", "3", "--server", url], env=env
        )
    assert found.exit_code == 0, found.output
    assert "no passages found" in found.stdout
    assert len(recorded.requests) == 2
    path, body, headers = recorded.requests[-1]
    assert path == "/search" and headers["authorization"] == "Bearer proxy-key"
    assert body["kb_names"] == ["a"] and body["top_k"] == 3 and body["mode"] == "hybrid"
    assert headers["user-agent"].startswith("eagle-rag-client")
    assert not (tmp_path / "unused").exists()


def test_tasks_show_and_cancel_over_http(
    remote: RunningServer, env: dict[str, str], tmp_path: Path
) -> None:
    from tests.ingest.long_scan import long_scan

    assert runner.invoke(app, ["kb", "create", "scans"], env=env).exit_code == 0
    with remote.client(Authorization=f"Bearer {KEY}") as http:
        files = {"file": ("long.pdf", long_scan())}
        answer = http.post("/ingest", data={"kb_name": "scans"}, files=files)
        assert answer.status_code == 202, answer.text
        job_id = str(answer.json()["job_id"])
        shown = runner.invoke(app, ["tasks", "show", job_id, "--json"], env=env)
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.stdout)["status"] in ("queued", "processing")

        cancelled = runner.invoke(app, ["tasks", "cancel", job_id], env=env)
        assert cancelled.exit_code == 0, cancelled.output
        assert f"{job_id}  long.pdf  failed" in cancelled.stdout
        assert "cancelled by request" in cancelled.stdout
        task = http.get(f"/tasks/{job_id}").json()
        assert task["status"] == "failed" and "cancelled by request" in task["error"]

        again = runner.invoke(app, ["tasks", "cancel", job_id], env=env)
        assert again.exit_code == 1 and "nothing to cancel" in again.output
        unknown = runner.invoke(app, ["tasks", "show", "no-such-task"], env=env)
        assert unknown.exit_code == 2 and "not found" in unknown.output
        listed = runner.invoke(app, ["tasks", "list", "--kb", "scans", "--json"], env=env)
        assert listed.exit_code == 0, listed.output
        assert [t["job_id"] for t in json.loads(listed.stdout)] == [job_id]
    assert runner.invoke(app, ["kb", "delete", "scans", "--yes"], env=env).exit_code == 0


def test_a_server_of_another_data_dir_at_the_configured_address_is_not_used(
    remote: RunningServer, tmp_path: Path
) -> None:
    """Found at the configured address, another instance's server received this data dir's
    commands: `kb list` showed its KBs, and `kb delete` would have deleted from it."""
    created = remote.client(Authorization=f"Bearer {KEY}").post(
        "/knowledge_bases", json={"kb_name": "theirs"}
    )
    assert created.status_code == 201, created.text
    port = remote.url.rsplit(":", 1)[1]
    base = {"EAGLE_ENCODER_MODE": "deterministic", "EAGLE_API_KEY": KEY}
    address = {"EAGLE_RAG_SERVER__HOST": "127.0.0.1", "EAGLE_RAG_SERVER__PORT": port}

    mine = {**base, **address, "EAGLE_DATA_DIR": str(tmp_path / "mine")}
    listed = runner.invoke(app, ["kb", "list", "--json"], env=mine)
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == []  # this data dir's own (empty) store
    assert (tmp_path / "mine" / "eagle.db").exists()

    theirs = {**base, **address, "EAGLE_DATA_DIR": str(remote.settings.data_dir)}
    listed = runner.invoke(app, ["kb", "list", "--json"], env=theirs)
    assert listed.exit_code == 0, listed.output
    assert "theirs" in [k["kb_name"] for k in json.loads(listed.stdout)]  # through its server


@pytest.mark.parametrize("answer", ["keyed-instance", "other-json", "not-json"])
def test_a_server_that_cannot_be_this_data_dirs_leaves_the_commands_on_the_store(
    remote: RunningServer, tmp_path: Path, answer: str
) -> None:
    """While no process holds this data dir, whatever answers at the configured address serves
    another: a keyed instance made every command a 401, and another service on the port (a
    worker's metrics) a JSON-decode traceback or a 405, never the store the data dir holds."""

    def other_service(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        if answer == "other-json":
            return json_answer(200, {"status": "ok", "uptime": 3})
        return 200, {"content-type": "text/plain"}, b"# HELP up 1\nup 1\n"

    with serve(other_service) as (fake, _):
        url = remote.url if answer == "keyed-instance" else fake
        host, port = url.removeprefix("http://").split(":")
        env = {  # no EAGLE_API_KEY: the keyed instance's /health says nothing to this caller
            "EAGLE_ENCODER_MODE": "deterministic",
            "EAGLE_DATA_DIR": str(tmp_path / "mine"),
            "EAGLE_RAG_SERVER__HOST": host,
            "EAGLE_RAG_SERVER__PORT": port,
        }
        listed = runner.invoke(app, ["kb", "list", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == []  # this data dir's own (empty) store
    assert (tmp_path / "mine" / "eagle.db").exists()
