"""Generate a synthetic dbt project of a given size (models, columns, sources, lineage).

Deterministic for a seed: ``models`` SQL models with ref()/source() lineage and property
files of 10 models each whose columns add up to ``columns``. Used by the lakehouse ingest
benchmark and the large-project test.
"""

from __future__ import annotations

import random
from pathlib import Path

WORDS = (
    "order",
    "customer",
    "payment",
    "refund",
    "product",
    "store",
    "supply",
    "invoice",
    "shipment",
    "campaign",
    "session",
    "account",
    "ledger",
    "budget",
    "forecast",
    "inventory",
    "vendor",
    "employee",
    "region",
    "channel",
    "coupon",
)
MEASURES = "amount total count cost price quantity rate value score duration".split()  # noqa: SIM905


def generate(root: Path, *, models: int = 350, columns: int = 4000, seed: int = 7) -> Path:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    names = [f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{i:03d}" for i in range(models)]
    per_model = [columns // models + (1 if i < columns % models else 0) for i in range(models)]
    (root / "dbt_project.yml").write_text("name: big_shop\nconfig-version: 2\nprofile: big_shop\n")
    sources = "version: 2\nsources:\n  - name: raw\n    tables:\n"
    sources += "".join(
        f"      - name: raw_{w}\n        description: Raw {w} records.\n" for w in WORDS
    )
    (root / "_sources.yml").write_text(sources)
    for start in range(0, models, 10):
        lines = ["version: 2", "models:"]
        for i in range(start, min(start + 10, models)):
            lines += [
                f"  - name: {names[i]}",
                f"    description: One row per {names[i].split('_')[0]} "
                f"with its {names[i].split('_')[1]} facts.",
                "    columns:",
            ]
            for c in range(per_model[i]):
                measure = MEASURES[c % len(MEASURES)]
                column = "id" if c == 0 else f"{rng.choice(WORDS)}_{measure}_{c}"
                lines += [
                    f"      - name: {column}",
                    f"        description: The {measure} of the "
                    f"{column.split('_')[0]} for this row.",
                    "        data_type: numeric",
                ]
                if c == 0:
                    lines.append("        data_tests: [unique, not_null]")
        (root / f"_models_{start // 10:03d}.yml").write_text("\n".join(lines) + "\n")
    for i, name in enumerate(names):
        parents = [names[j] for j in rng.sample(range(i), min(i, 2))] if i else []
        refs = [f"{{{{ ref('{p}') }}}}" for p in parents] or [
            f"{{{{ source('raw', 'raw_{rng.choice(WORDS)}') }}}}"
        ]
        body = "\nunion all\n".join(f"select * from {r}" for r in refs)
        (root / f"{name}.sql").write_text(f"{{{{ config(materialized='table') }}}}\n{body}\n")
    return root
