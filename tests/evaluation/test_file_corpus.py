"""``eagle-rag eval --files``: a folder of real files (text, PDF, a scan) scored per document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle_rag.cli import app
from eagle_rag.errors import InvalidInputError
from eagle_rag.evaluation.beir import load_dataset
from tests.ingest import scans

runner = CliRunner()


def _write(folder: Path) -> Path:
    docs = folder / "docs"
    docs.mkdir(parents=True)
    (docs / "alpha.md").write_text("# Glaciers\n\nGlaciers retreat as summers warm.\n")
    (docs / "beta.pdf").write_bytes(
        scans.text_pdf([("Tides", "Spring tides follow the full and new moon.")])
    )
    (docs / "gamma.png").write_bytes(scans.encode(scans.en_page(), "PNG"))  # OCR'd
    (docs / ".DS_Store").write_bytes(b"\x00")  # hidden files are not documents
    queries = [
        {"_id": "q1", "text": "why do glaciers retreat"},
        {"_id": "q2", "text": "when are spring tides"},
        {"_id": "q3", "text": "forklift inspections schedule"},
    ]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\talpha\t1\nq2\tbeta\t1\nq3\tgamma\t1\n"
    )
    return folder


def test_a_file_corpus_loads_with_stems_as_ids(tmp_path: Path) -> None:
    dataset = load_dataset(_write(tmp_path / "set"), files=Path("docs"))
    assert dataset.name == "set/docs"
    assert [(d.id, d.path.name if d.path else None) for d in dataset.corpus] == [
        ("alpha", "alpha.md"),
        ("beta", "beta.pdf"),
        ("gamma", "gamma.png"),
    ]
    assert set(dataset.queries) == {"q1", "q2", "q3"}


def test_a_file_corpus_refuses_shared_stems_and_missing_folders(tmp_path: Path) -> None:
    folder = _write(tmp_path / "set")
    (folder / "docs" / "alpha.txt").write_text("Another alpha.")
    with pytest.raises(InvalidInputError, match="share the corpus id 'alpha'"):
        load_dataset(folder, files=Path("docs"))
    with pytest.raises(InvalidInputError, match="is not a directory"):
        load_dataset(folder, files=Path("scans"))


def test_eval_scores_files_at_document_level(tmp_path: Path) -> None:
    folder = _write(tmp_path / "set")
    env = {"EAGLE_DATA_DIR": str(tmp_path / "data"), "EAGLE_ENCODER_MODE": "deterministic"}
    result = runner.invoke(
        app, ["eval", str(folder), "--files", "docs", "--modes", "sparse", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["dataset"], report["documents"], report["queries"]) == ("set/docs", 3, 3)
    assert report["failed_documents"] == 0
    [sparse] = report["modes"]
    assert sparse["metrics"]["ndcg@10"] == 1.0  # the scan answers its query like the others
