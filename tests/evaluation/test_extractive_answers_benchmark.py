"""The answer benchmark's scoring: what counts as quoting a gold answer, and its baseline."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.extractive_answers import gold_answers, hits, lead


def test_a_hit_ignores_whitespace_and_case_but_not_words() -> None:
    assert hits("比赛 4 分钟内不得配对 [1]", ["4分钟"])
    assert hits("The Warranty lasts\n10 years. [2]", ["warranty lasts 10 years"])
    assert not hits("The warranty lasts 12 years.", ["10 years"])


def test_lead_takes_the_first_sentences_of_either_language() -> None:
    assert lead("One. Two! Three? Four.") == "One. Two! Three?"
    assert lead("甲。乙！丙？丁。", sentences=2) == "甲。乙！"
    assert lead("no end at all") == "no end at all"


def test_gold_answers_come_from_the_queries_metadata(tmp_path: Path) -> None:
    rows = [
        {"_id": "a", "text": "q", "metadata": {"answers": ["x", " "]}},
        {"_id": "b", "text": "q", "metadata": {"answers": "y"}},
        {"_id": "c", "text": "q", "metadata": {}},
    ]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert gold_answers(tmp_path) == {"a": ["x"], "b": ["y"]}
