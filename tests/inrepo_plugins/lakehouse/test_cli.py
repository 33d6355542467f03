"""`eagle-rag ingest <dbt project> --kb warehouse` under the lakehouse-bi profile, then search."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from eagle_rag.cli import app
from tests.inrepo_plugins.lakehouse.conftest import PROJECT

runner = CliRunner()


def test_folder_ingest_of_a_project_then_search(tmp_path: Path) -> None:
    env = {
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_RAG_PROFILE": "lakehouse-bi",
        "EAGLE_SERVER_URL": "",
        "EAGLE_PORT": "1",  # nothing answers there: the CLI uses the embedded store
    }
    ingest = runner.invoke(
        app, ["ingest", str(PROJECT), "--kb", "warehouse", "--create", "--json"], env=env
    )
    assert ingest.exit_code == 0, ingest.stdout
    outcomes = json.loads(ingest.stdout)
    assert {o["status"] for o in outcomes} == {"completed"}
    assert len(outcomes) == sum(1 for p in PROJECT.rglob("*") if p.is_file())

    found = runner.invoke(
        app, ["search", "what does net_amount include?", "--kb", "warehouse", "--json"], env=env
    )
    assert found.exit_code == 0, found.stdout
    first = json.loads(found.stdout)["sources"]["text"][0]
    assert first["path"] == "warehouse/orders/net_amount"
    assert first["metadata"]["object_type"] == "column"
    assert "stg_payments" in first["metadata"]["upstream"]  # the orders model's, from orders.sql


def test_same_named_property_files_in_different_folders_stay_apart(tmp_path: Path) -> None:
    """dbt projects often have a ``schema.yml`` per folder: neither replaces the other."""
    project = tmp_path / "project"
    shutil.copytree(PROJECT / "models", project / "models")
    for folder, old in (("staging", "_stg__models.yml"), ("marts", "_marts__models.yml")):
        (project / "models" / folder / old).rename(project / "models" / folder / "schema.yml")
    env = {
        "EAGLE_DATA_DIR": str(tmp_path / "data"),
        "EAGLE_ENCODER_MODE": "deterministic",
        "EAGLE_RAG_PROFILE": "lakehouse-bi",
        "EAGLE_SERVER_URL": "",
        "EAGLE_PORT": "1",
    }
    ingest = runner.invoke(
        app, ["ingest", str(project), "--kb", "dbt", "--create", "--json"], env=env
    )
    assert ingest.exit_code == 0, ingest.stdout
    names = {o["name"] for o in json.loads(ingest.stdout)}
    assert {"staging/schema.yml", "marts/schema.yml"} <= names  # paths inside the folder
    for question, path in (
        ("what does net_amount include?", "dbt/orders/net_amount"),
        ("what is stg_orders.ordered_at?", "dbt/stg_orders/ordered_at"),
    ):
        found = runner.invoke(
            app,
            ["search", question, "--kb", "dbt", "--json", "--filter", '{"object_type": "column"}'],
            env=env,
        )
        assert found.exit_code == 0, found.stdout
        first = json.loads(found.stdout)["sources"]["text"][0]
        assert (first["path"], first["metadata"]["filename"]) == (path, path_file(path))


def path_file(path: str) -> str:
    folder = "staging" if "/stg_" in path else "marts"
    return f"{folder}/schema.yml"
