"""Metrics against hand-computed values, and the BEIR loader's formats and errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.metrics import (
    hit_at,
    mrr_at,
    ndcg_at,
    percentile,
    recall_at,
    score_run,
)

QRELS = {"a": 3, "b": 1, "z": 0}


def test_ndcg_uses_graded_linear_gains() -> None:
    # DCG = 1/log2(2) [b at 1] + 3/log2(4) [a at 3]; IDCG = 3/log2(2) + 1/log2(3)
    expected = (1 + 3 / 2) / (3 + 1 / math.log2(3))
    assert ndcg_at(["b", "x", "a"], QRELS, 10) == pytest.approx(expected)
    assert ndcg_at(["a", "b"], QRELS, 10) == pytest.approx(1.0)
    assert ndcg_at(["z", "x"], QRELS, 10) == 0.0  # grade 0 is not relevant


def test_recall_mrr_hit() -> None:
    assert recall_at(["x", "a"], QRELS, 10) == 0.5
    assert recall_at(["x", "a"], QRELS, 1) == 0.0
    assert mrr_at(["x", "z", "b"], QRELS, 10) == pytest.approx(1 / 3)
    assert mrr_at(["x", "z", "b"], QRELS, 2) == 0.0
    assert hit_at(["x", "x2", "x3", "x4", "a"], QRELS, 5) == 1.0
    assert hit_at(["x", "x2", "x3", "x4", "x5", "a"], QRELS, 5) == 0.0


def test_score_run_counts_missing_runs_as_zero() -> None:
    scores = score_run({"q1": ["a", "b"]}, {"q1": QRELS, "q2": {"c": 1}})
    assert scores["ndcg@10"] == pytest.approx(0.5)
    assert scores["hit@5"] == pytest.approx(0.5)


def test_score_run_of_no_judged_query_is_zero() -> None:
    assert set(score_run({}, {}).values()) == {0.0}


def test_percentile_is_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile([1.0, 2.0], 95) == 2.0
    assert percentile([], 50) == 0.0


def write_dataset(folder: Path, *, header: bool) -> Path:
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Solar", "text": "panels on roofs"},
        {"_id": "d2", "title": "", "text": "compost heaps"},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    queries = [
        {"_id": "q1", "text": "roof panels"},
        {"_id": "q2", "text": "unjudged"},
        {"_id": "q3", "text": "  "},
    ]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries))
    lines = ["query-id\tcorpus-id\tscore"] if header else []
    lines += ["q1\td1\t2", "q1\td2\t0", "q1\tmissing\t1", "q3\td2\t1"]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("header", [True, False])
def test_loader_reads_qrels_with_or_without_header(tmp_path: Path, header: bool) -> None:
    dataset = load_dataset(write_dataset(tmp_path / "set", header=header))
    assert dataset.name == "set"
    assert [d.id for d in dataset.corpus] == ["d1", "d2"]
    assert dataset.corpus[0].body == "Solar\n\npanels on roofs"
    assert dataset.corpus[1].body == "compost heaps"
    assert dict(dataset.queries) == {"q1": "roof panels"}  # q2 has no judgement
    assert dataset.blank_queries == 1  # q3 is judged but has no text
    assert dict(dataset.qrels["q1"]) == {"d1": 2, "d2": 0}  # unknown corpus ids dropped


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "corpus.jsonl").unlink(), "missing"),
        (lambda f: (f / "corpus.jsonl").write_text('{"_id": "d1"\n'), "corpus.jsonl:1 is not JSON"),
        (lambda f: (f / "corpus.jsonl").write_text('{"_id": "d1"}\n'), "lacks text"),
        (lambda f: (f / "qrels" / "test.tsv").write_text("q1\td1\n"), "needs query-id"),
        (lambda f: (f / "qrels" / "test.tsv").write_text("q1\td1\t1\nq1\td2\tx\n"), "not a number"),
        (lambda f: (f / "qrels" / "test.tsv").write_text("q9\td1\t1\n"), "no query has"),
    ],
)
def test_loader_names_what_is_wrong(tmp_path: Path, damage: object, message: str) -> None:
    folder = write_dataset(tmp_path / "set", header=False)
    damage(folder)  # type: ignore[operator]
    with pytest.raises(InvalidInputError, match=message):
        load_dataset(folder)


def test_loader_refuses_a_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a directory"):
        load_dataset(tmp_path / "nothing")
