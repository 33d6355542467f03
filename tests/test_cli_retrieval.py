"""``eagle-rag search`` and ``eagle-rag eval`` end to end on a temporary embedded store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle_rag.cli import app
from tests.evaluation.test_metrics import write_dataset
from tests.ingest import documents as docs

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"EAGLE_DATA_DIR": str(tmp_path / "data"), "EAGLE_ENCODER_MODE": "deterministic"}


def test_search_prints_ranked_passages_with_paths_and_pages(
    env: dict[str, str], tmp_path: Path
) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(docs.pdf_bytes())
    assert runner.invoke(app, ["kb", "create", "reports"], env=env).exit_code == 0
    ingested = runner.invoke(app, ["ingest", str(report), "--kb", "reports"], env=env)
    assert ingested.exit_code == 0, ingested.output

    shown = runner.invoke(app, ["search", "scope of the audit", "--kb", "reports"], env=env)
    assert shown.exit_code == 0, shown.output
    first = shown.output.splitlines()[0]
    assert first.startswith("[1] Annual Report/Chapter 1 Overview/1.1 Scope")
    assert "report.pdf · pages 2 · reports" in first

    as_json = runner.invoke(
        app,
        ["search", "outlook demand", "--kb", "reports", "--json", "--filter", '{"pages": [3, 3]}'],
        env=env,
    )
    pack = json.loads(as_json.output)
    assert pack["sources"]["text"]
    assert all(3 in p["page_nums"] for p in pack["sources"]["text"])
    assert pack["route"]["plans"][0]["collection"] == "eagle_text"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["search", "x", "--kb", "nope"], "not found"),
        (["search", "x", "--filter", "{year"], "--filter is not JSON"),
        (["search", "x", "--filter", '{"colour": "red"}'], "unknown filter"),
        (["search", "x", "--mode", "fuzzy"], "mode: Input should be"),
    ],
)
def test_search_errors_are_clear(env: dict[str, str], arguments: list[str], message: str) -> None:
    result = runner.invoke(app, arguments, env=env)
    assert result.exit_code == 2
    assert message in result.output


def test_eval_reports_every_mode_as_json(env: dict[str, str], tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "tiny", header=True)
    result = runner.invoke(app, ["eval", str(dataset), "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["dataset"] == "tiny" and report["documents"] == 2 and report["queries"] == 1
    assert report["failed_documents"] == 0 and report["ingest_docs_per_s"] > 0
    assert [m["mode"] for m in report["modes"]] == ["dense", "sparse", "hybrid"]
    assert report["reranker"] is None  # hybrid+rerank is skipped without a reranker
    sparse = next(m for m in report["modes"] if m["mode"] == "sparse")
    assert sparse["metrics"]["hit@5"] == 1.0 and sparse["metrics"]["ndcg@10"] == 1.0
    assert report["baseline_p50_ms"] > 0 and report["hybrid_fusion"] == "normalized"
    assert not (tmp_path / "data").exists()  # a temporary store unless --data-dir is given


def test_eval_runs_and_reports_the_configured_hybrid_fusion(
    env: dict[str, str], tmp_path: Path
) -> None:
    dataset = write_dataset(tmp_path / "tiny", header=True)
    by_rank = {**env, "EAGLE_RAG_RETRIEVAL__HYBRID_FUSION": "rrf"}
    result = runner.invoke(app, ["eval", str(dataset), "--modes", "hybrid"], env=by_rank)
    assert result.exit_code == 0, result.output
    assert "hybrid fusion rrf" in " ".join(result.output.split())
    # The per-hook timings table: Core's subscribers of the query hooks, timed per phase.
    assert "hook timings" in result.output
    assert "CLASSIFY_QUERY" in result.output and "core" in result.output


def test_eval_refuses_unknown_modes_and_bad_folders(env: dict[str, str], tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "tiny", header=False)
    bad_mode = runner.invoke(app, ["eval", str(dataset), "--modes", "dense,magic"], env=env)
    assert bad_mode.exit_code == 2 and "unknown modes: magic" in bad_mode.output
    missing = runner.invoke(app, ["eval", str(tmp_path / "none")], env=env)
    assert missing.exit_code == 2 and "not a directory" in " ".join(missing.output.split())


@pytest.mark.parametrize("count", ["0", "-1"])
def test_eval_refuses_a_max_queries_under_1(
    env: dict[str, str], tmp_path: Path, count: str
) -> None:
    # 0 was a ZeroDivisionError traceback; -1 quietly evaluated all but the last query.
    dataset = write_dataset(tmp_path / "tiny", header=False)
    result = runner.invoke(app, ["eval", str(dataset), "--max-queries", count], env=env)
    assert result.exit_code == 2, result.output
    assert f"--max-queries must be at least 1, not {count}" in result.stderr


def test_eval_adds_hybrid_rerank_when_a_reranker_is_configured(
    env: dict[str, str], tmp_path: Path
) -> None:
    from tests.http_fakes import serve
    from tests.retrieval.test_rerankers import rerank_server

    dataset = write_dataset(tmp_path / "tiny", header=False)
    with serve(rerank_server) as (url, recorded):
        configured = {
            **env,
            "EAGLE_RERANK_PROVIDER": "http",
            "EAGLE_RERANK_STYLE": "tei",
            "EAGLE_RERANK_URL": url + "/rerank",
        }
        result = runner.invoke(app, ["eval", str(dataset), "--json"], env=configured)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [m["mode"] for m in report["modes"]] == ["dense", "sparse", "hybrid", "hybrid+rerank"]
    assert report["reranker"] == f"tei:{url}/rerank"
    assert recorded.requests  # the reranker was really called


def test_image_hits_print_under_their_own_heading(capsys: pytest.CaptureFixture[str]) -> None:
    """Images were printed after the passages as "[1] …" again, with no word that they were
    pictures; and a file name with brackets lost them to Rich's markup."""
    from eagle_rag.cli.retrieval import _print_sources

    common = {"kb_name": "kb", "score": 0.5}
    text = {"index": 1, "path": "Guide/Wiring", "filename": "guide[v2].md", "page_nums": [2]}
    image = {"index": 1, "parent_section": "Guide", "filename": "scan.png", "page": 1}
    result = {
        "sources": {
            "text": [{**common, **text, "content": "Use copper cables."}],
            "image": [{**common, **image, "chunk_type": "tile", "content_summary": "A page."}],
        },
        "steps": [],
    }
    _print_sources(result)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[1] Guide/Wiring  guide[v2].md · pages 2")
    assert lines[2] == "images"
    assert lines[3].startswith("[image 1] tile Guide  scan.png · pages 1")
