"""How often does the offline answer quote the answer? The extractive answerer on a reading set.

For a dataset whose queries carry their gold answers (``metadata.answers``, e.g. cmrc2018's
answer spans), the corpus is ingested on the embedded default and each query asked through the
answer engine (search, then ``models.chat: extractive``). An answer *hits* when one of its gold
answers appears in it (whitespace and case ignored). Printed for the same searches:

- ``ceiling``: a gold answer is somewhere in the sources the answer was composed from (no
  extractive answer can do better);
- ``extractive``: the answer quotes it, and how long the answers are;
- ``lead-3`` (the baseline): the first three sentences of the top source, a classic extractive
  baseline; the ratio is extractive over lead-3.

    .venv/bin/python -m benchmarks.extractive_answers ../shared/datasets/cmrc2018-trial
    python -m benchmarks.extractive_answers ../shared/datasets/cmrc2018-trial \
        --skip 300 --queries 700
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import platform
import re
import tempfile
from pathlib import Path
from typing import Any

from eagle_rag.bootstrap import bootstrap
from eagle_rag.evaluation.beir import load_dataset
from eagle_rag.evaluation.runner import Evaluator
from eagle_rag.settings import load_settings

# Sentence ends of both languages, for the lead-3 baseline only.
_SENTENCE = re.compile(r"[^。！？.!?]*[。！？.!?]+|[^。！？.!?]+$")


def gold_answers(folder: Path) -> dict[str, list[str]]:
    """Query id -> its gold answers, from ``queries.jsonl``'s metadata."""
    answers: dict[str, list[str]] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            query = json.loads(line)
            found = (query.get("metadata") or {}).get("answers") or []
            if isinstance(found, str):
                found = [found]
            if found := [a for a in found if a.strip()]:
                answers[str(query["_id"])] = found
    return answers


def squeezed(text: str) -> str:
    return "".join(text.split()).lower()


def hits(text: str, answers: list[str]) -> bool:
    flat = squeezed(text)
    return any(squeezed(a) in flat for a in answers)


def lead(text: str, sentences: int = 3) -> str:
    return "".join(_SENTENCE.findall(" ".join(text.split()))[:sentences])


async def run(folder: Path, count: int, skip: int = 0) -> dict[str, Any]:
    dataset = load_dataset(folder)
    answers = gold_answers(folder)
    ids = sorted(
        (q for q in dataset.queries if q in answers),
        key=lambda q: hashlib.sha1(q.encode()).hexdigest(),
    )[skip : skip + count]
    tally = {"ceiling": 0, "extractive": 0, "lead-3": 0}
    lengths = {"extractive": 0, "lead-3": 0}
    with tempfile.TemporaryDirectory(prefix="eagle-bench-") as data:
        environ = {**os.environ, "EAGLE_DATA_DIR": data, "EAGLE_CHAT_PROVIDER": "extractive"}
        app = await bootstrap(load_settings(environ))
        try:
            await Evaluator(app, keep=True).run(dataset, modes=("hybrid",), max_queries=1)
            kb = next(k.name for k in app.repositories.knowledge_bases.list())
            for qid in ids:
                done = await app.answers.answer(
                    app.answers.request(dataset.queries[qid], kb_names=(kb,))
                )
                sources = [s["content"] for s in done["sources"]["text"]]
                baseline = lead(sources[0]) if sources else ""
                gold = answers[qid]
                tally["ceiling"] += any(hits(s, gold) for s in sources)
                tally["extractive"] += hits(done["answer"], gold)
                tally["lead-3"] += hits(baseline, gold)
                lengths["extractive"] += len(done["answer"])
                lengths["lead-3"] += len(baseline)
        finally:
            await app.stop()
    return {
        "dataset": dataset.name,
        "queries": len(ids),
        **{name: round(n / len(ids), 3) for name, n in tally.items()},
        "mean_chars": {name: round(n / len(ids)) for name, n in lengths.items()},
        "ratio": round(tally["extractive"] / max(1, tally["lead-3"]), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first queries (held out from them)"
    )
    arguments = parser.parse_args()
    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} cores")
    for folder in arguments.datasets:
        result = asyncio.run(run(folder, arguments.queries, arguments.skip))
        print(
            f"{result['dataset']}: {result['queries']} queries; gold answer in the sources "
            f"(ceiling) {result['ceiling']:.3f}; in the extractive answer "
            f"{result['extractive']:.3f}; in lead-3 (baseline) {result['lead-3']:.3f}; "
            f"ratio {result['ratio']:.3f}; mean characters {result['mean_chars']}"
        )


if __name__ == "__main__":
    main()
