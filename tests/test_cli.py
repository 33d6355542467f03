from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle_rag import __version__
from eagle_rag.cli import app
from tests.servers import free_port

runner = CliRunner()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"EAGLE_DATA_DIR": str(tmp_path / "data"), **extra}


def test_version() -> None:
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == __version__


def test_doctor_is_healthy_on_the_embedded_default(tmp_path: Path) -> None:
    result = runner.invoke(app, ["doctor"], env=_env(tmp_path))
    assert result.exit_code == 0, result.output
    assert "healthy" in result.stdout
    assert "CLASSIFY_QUERY" in result.stdout
    assert "MCP tools of plugins: -" in result.stdout and "Core's MCP tools" in result.stdout
    assert (tmp_path / "data").is_dir()
    # A new data dir is fine on a new machine, but a mistyped path must not pass unnoticed.
    said = " ".join(result.stdout.split())
    assert f"the data dir {tmp_path / 'data'} did not exist" in said
    again = runner.invoke(app, ["doctor"], env=_env(tmp_path))
    assert again.exit_code == 0 and "did not exist" not in again.stdout


def test_doctor_json_reports_backends_plugins_and_masked_settings(tmp_path: Path) -> None:
    env = _env(tmp_path, EAGLE_RAG_PLUGINS__OPTIONS__CORE__API_TOKEN="tok-secret-1")
    result = runner.invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {b["name"]: b["status"] for b in report["backends"]} == {
        "data_dir": "ok",
        "metadata_db": "ok",
        "milvus": "ok",
        "object_store": "ok",
        "broker": "disabled",  # the in-process queue
        "redis": "disabled",
    }
    [milvus] = [b for b in report["backends"] if b["name"] == "milvus"]
    assert milvus["version"].startswith("milvus_lite")
    assert report["plugins"]["plugins"][0]["namespace"] == "core"
    assert "tok-secret-1" not in result.stdout


def test_doctor_shows_each_collections_encoder_and_fails_on_a_conflict(tmp_path: Path) -> None:
    """Vectors of another encoder make the next start refuse: doctor says so beforehand."""
    hashing = _env(tmp_path, EAGLE_ENCODER_MODE="deterministic")
    (tmp_path / "pump.md").write_text("# Pump\n\nThe coolant pump runs at 2900 rpm.\n")
    assert runner.invoke(app, ["kb", "create", "docs"], env=hashing).exit_code == 0
    ingested = runner.invoke(
        app, ["ingest", str(tmp_path / "pump.md"), "--kb", "docs"], env=hashing
    )
    assert ingested.exit_code == 0, ingested.output

    def encoders(env: dict[str, str]) -> tuple[int, dict[str, dict[str, str]]]:
        result = runner.invoke(app, ["doctor", "--json"], env=env)
        return result.exit_code, {e["collection"]: e for e in json.loads(result.stdout)["encoders"]}

    code, records = encoders(hashing)
    assert code == 0 and records["eagle_text"]["state"] == "ok"
    minilm = {**_env(tmp_path), "EAGLE_RAG_MODELS__EMBEDDING__PROVIDER": "minilm"}
    code, records = encoders(minilm)
    assert code == 1
    assert records["eagle_text"]["recorded"] == "hashing-384"
    assert records["eagle_text"]["configured"].startswith("all-MiniLM")
    assert "the next start refuses" in records["eagle_text"]["state"]
    code, records = encoders({**minilm, "EAGLE_RAG_MILVUS__REEMBED_ON_ENCODER_CHANGE": "true"})
    assert code == 0 and "re-embeds every KB" in records["eagle_text"]["state"]
    table = runner.invoke(app, ["doctor"], env=minilm)
    assert "Encoders" in table.stdout and "unhealthy" in table.stdout


def test_doctor_exits_1_when_a_backend_is_down(tmp_path: Path) -> None:
    env = _env(tmp_path, EAGLE_DATABASE_URL="sqlite:////nonexistent-dir/deeper/eagle.db")
    result = runner.invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    [database] = [b for b in report["backends"] if b["name"] == "metadata_db"]
    assert database["status"] == "down" and database["detail"]


def test_doctor_exits_1_when_plugins_fail_to_load(tmp_path: Path) -> None:
    env = _env(tmp_path, EAGLE_RAG_PLUGINS__ENABLED="[plugins.does_not_exist]")
    result = runner.invoke(app, ["doctor"], env=env)
    assert result.exit_code == 1
    assert "plugins.does_not_exist" in result.stdout


def test_doctor_checks_redis_when_the_profile_uses_it(tmp_path: Path) -> None:
    env = _env(tmp_path, EAGLE_RAG_TELEMETRY__PLUGIN_AUDIT_REDIS_ENABLED="true")
    result = runner.invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.output
    [redis] = [b for b in json.loads(result.stdout)["backends"] if b["name"] == "redis"]
    assert redis["status"] == "ok" and redis["version"].startswith("redis ")


def test_doctor_checks_the_celery_broker_and_exits_1_when_it_is_down(tmp_path: Path) -> None:
    # /health reported a dead broker; doctor did not look and said "healthy" (exit 0).
    dead = _env(
        tmp_path, EAGLE_RAG_QUEUE__BACKEND="celery", EAGLE_BROKER_URL="redis://127.0.0.1:1/12"
    )
    result = runner.invoke(app, ["doctor", "--json"], env=dead)
    assert result.exit_code == 1, result.output
    [broker] = [b for b in json.loads(result.stdout)["backends"] if b["name"] == "broker"]
    assert broker["status"] == "down" and broker["target"] == "redis://127.0.0.1:1/12"
    assert broker["detail"]
    table = runner.invoke(app, ["doctor"], env=dead)
    assert table.exit_code == 1 and "broker" in table.stdout
    live = {**dead, "EAGLE_BROKER_URL": "redis://127.0.0.1:6379/12"}
    result = runner.invoke(app, ["doctor", "--json"], env=live)
    assert result.exit_code == 0, result.output
    [broker] = [b for b in json.loads(result.stdout)["backends"] if b["name"] == "broker"]
    assert broker["status"] == "ok" and broker["version"].startswith("redis ")


def test_bad_settings_are_reported_with_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["doctor"], env=_env(tmp_path, EAGLE_RAG_PROFILE="nope"))
    assert result.exit_code == 2
    assert "unknown profile 'nope'" in result.stderr


@pytest.mark.parametrize("url", ["mysql://u:dbpw@127.0.0.1/db", "notaurl://x", "garbage"])
def test_an_unusable_database_url_is_a_settings_error(tmp_path: Path, url: str) -> None:
    # Each was SQLAlchemy's traceback on every command, exit 1.
    env = _env(tmp_path, EAGLE_DATABASE_URL=url)
    result = runner.invoke(app, ["kb", "list"], env=env)
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert "database.url" in said and "not a usable database URL" in said
    assert "dbpw" not in result.output and "Traceback" not in result.output
    doctor = runner.invoke(app, ["doctor", "--json"], env=env)
    assert doctor.exit_code == 1
    [database] = [b for b in json.loads(doctor.stdout)["backends"] if b["name"] == "metadata_db"]
    assert database["status"] == "down" and "database.url" in database["detail"]
    assert "dbpw" not in doctor.stdout


def test_a_postgres_scheme_url_is_postgresql(tmp_path: Path) -> None:
    # What managed providers hand out; SQLAlchemy knows only "postgresql".
    url = f"postgres://u:dbpw@127.0.0.1:{free_port()}/db"
    result = runner.invoke(app, ["kb", "list"], env=_env(tmp_path, EAGLE_DATABASE_URL=url))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: metadata database unavailable: connection failed")
    assert len(result.stderr.strip().splitlines()) <= 3  # one line, however Rich wraps it
    assert "dbpw" not in result.output
    # The health check said it over three lines, with a link to SQLAlchemy's docs.
    doctor = runner.invoke(app, ["doctor", "--json"], env=_env(tmp_path, EAGLE_DATABASE_URL=url))
    [database] = [b for b in json.loads(doctor.stdout)["backends"] if b["name"] == "metadata_db"]
    assert database["status"] == "down"
    assert "\n" not in database["detail"] and "sqlalche.me" not in database["detail"]


def _overwrite_pages(database: Path) -> None:
    for sidecar in ("-wal", "-shm"):
        database.with_name(database.name + sidecar).unlink(missing_ok=True)
    size = database.stat().st_size
    with database.open("r+b") as handle:
        handle.seek(4096)
        handle.write(bytes(range(256)) * ((size - 4096) // 256))


@pytest.mark.parametrize("damage", ["garbage", "pages"])
def test_a_damaged_sqlite_file_is_one_line_and_exit_2(tmp_path: Path, damage: str) -> None:
    # It was a 590-line traceback of the connect listener, exit 1 (serve: exit 3).
    env = _env(tmp_path, EAGLE_ENCODER_MODE="deterministic")
    assert runner.invoke(app, ["kb", "create", "k"], env=env).exit_code == 0
    database = tmp_path / "data" / "eagle.db"
    if damage == "garbage":
        database.write_bytes(b"garbage")
    else:
        _overwrite_pages(database)
    result = runner.invoke(app, ["kb", "list"], env=env)
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert f"metadata database unavailable: {database} is not a SQLite database" in said
    assert "Traceback" not in result.output
    doctor = runner.invoke(app, ["doctor", "--json"], env=env)
    [row] = [b for b in json.loads(doctor.stdout)["backends"] if b["name"] == "metadata_db"]
    assert doctor.exit_code == 1 and "not a SQLite database" in row["detail"]


@pytest.mark.parametrize("data_dir", ['""', "${EAGLE_TEST_NOT_SET}"])
def test_an_empty_data_dir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: str
) -> None:
    # It meant the current directory: eagle.db, milvus.db and objects/ were made wherever one was.
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"data_dir: {data_dir}\n")
    result = runner.invoke(
        app, ["kb", "create", "x"], env={"EAGLE_RAG_SETTINGS_FILE": str(settings)}
    )
    assert result.exit_code == 2, result.output
    assert "data_dir is empty" in " ".join(result.stderr.split())
    assert list(here.iterdir()) == []


def test_serve_refuses_a_port_in_use_before_starting(tmp_path: Path) -> None:
    # It opened every store, then failed with uvicorn's "[Errno 98]" and exit 3.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = runner.invoke(app, ["serve", "--port", str(port)], env=_env(tmp_path))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: port {port} on 127.0.0.1 is in use"
    assert not (tmp_path / "data").exists()  # refused before any store was opened


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "99999"], "--port must be between 1 and 65535, not 99999"),
        (["--port", "0"], "--port must be between 1 and 65535, not 0"),
        (["--host", "not a host"], "cannot listen on 'not a host' port"),
    ],
)
def test_serve_refuses_an_address_it_cannot_listen_on(
    tmp_path: Path, args: list[str], said: str
) -> None:
    # --port 99999 was an OverflowError traceback (exit 1); a bad host failed after start-up.
    result = runner.invoke(app, ["serve", *args], env=_env(tmp_path))
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.stderr.split()) and "Traceback" not in result.output
    assert not (tmp_path / "data").exists()


def test_doctor_masks_a_secret_in_a_urls_query(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/rerank?model=m&api_key=QSECRET"
    env = _env(tmp_path, EAGLE_RERANK_PROVIDER="http", EAGLE_RERANK_URL=url)
    for args in (["doctor"], ["doctor", "--json"]):
        result = runner.invoke(app, args, env=env)
        assert "QSECRET" not in result.output
    report = json.loads(result.stdout)
    [reranker] = [b for b in report["backends"] if b["name"] == "reranker"]
    assert reranker["target"].endswith("/rerank?model=m&api_key=********")
    assert report["settings"]["models"]["rerank"]["url"] == reranker["target"]


def test_plugins_list(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plugins", "list", "--json"], env=_env(tmp_path))
    assert result.exit_code == 0, result.output
    [core] = json.loads(result.stdout)
    assert core["namespace"] == "core" and core["module"] == "eagle_rag.plugins.core_defaults"


@pytest.mark.integration
def test_doctor_reports_production_backends(
    tmp_path: Path, postgres_url: str, s3_endpoint: str, milvus_uri: str
) -> None:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="t",
        aws_secret_access_key="t",
    ).create_bucket(Bucket="doctor-bucket")
    env = _env(
        tmp_path,
        EAGLE_RAG_PROFILE="production",
        EAGLE_DATABASE_URL=postgres_url,
        MILVUS_URI=milvus_uri,
        # its own Database on the shared server: other tests' collections are not its own
        EAGLE_RAG_MILVUS__DB_NAME=f"doctor_{uuid.uuid4().hex[:8]}",
        S3_ENDPOINT_URL=s3_endpoint,
        S3_BUCKET="doctor-bucket",
        S3_ACCESS_KEY_ID="t",
        S3_SECRET_ACCESS_KEY="secret-key-value",
    )
    result = runner.invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.output
    backends = {b["name"]: b for b in json.loads(result.stdout)["backends"]}
    assert all(b["status"] == "ok" for b in backends.values()), backends
    assert backends["metadata_db"]["version"].startswith("postgresql 15")
    assert backends["object_store"]["version"] == "s3 bucket doctor-bucket exists"
    assert backends["redis"]["version"].startswith("redis ")
    assert backends["broker"]["version"].startswith("redis ")  # the production queue: Celery
    assert "secret-key-value" not in result.stdout


@pytest.mark.integration
def test_doctor_reports_an_unreachable_milvus_server(tmp_path: Path) -> None:
    env = _env(
        tmp_path, MILVUS_URI=f"http://127.0.0.1:{free_port()}", EAGLE_RAG_MILVUS__TIMEOUT_S="2"
    )
    result = runner.invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 1
    [milvus] = [b for b in json.loads(result.stdout)["backends"] if b["name"] == "milvus"]
    assert milvus["status"] == "down" and "Milvus" in milvus["detail"]


def test_doctor_says_why_visuals_are_off(tmp_path: Path) -> None:
    env = _env(tmp_path, EAGLE_ENCODER_MODE="deterministic", EAGLE_VISUAL_DIM="16")
    (tmp_path / "data").mkdir()  # an existing installation: no "did not exist" warning
    result = runner.invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.output  # a feature off, not a failure
    [warning] = json.loads(result.stdout)["warnings"]
    assert warning.startswith("visuals off: ") and "milvus.visual_dim is 16" in warning
    printed = runner.invoke(app, ["doctor"], env=env)
    assert "visuals off:" in printed.stdout
    on = runner.invoke(
        app, ["doctor", "--json"], env=_env(tmp_path, EAGLE_ENCODER_MODE="deterministic")
    )
    assert json.loads(on.stdout)["warnings"] == []


def test_serve_options_reach_the_settings_the_app_checks_host_names_with() -> None:
    from eagle_rag.api.hosts import open_host_names
    from eagle_rag.cli.server import bound_settings
    from eagle_rag.settings import load_settings

    settings = load_settings({})
    assert bound_settings(settings, None, None) is settings
    everywhere = bound_settings(settings, "0.0.0.0", 9001)
    assert (everywhere.server.host, everywhere.server.port) == ("0.0.0.0", 9001)
    # `serve --host 0.0.0.0` (the container images) must not leave the open API refusing
    # every name but localhost.
    assert open_host_names(everywhere.server) is None
