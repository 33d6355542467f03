"""Copy one namespace from a source's stores to a target's, then verify the copy.

Order: metadata (parents first), then vectors, then objects. Every write copies only what the
target lacks (primary keys, vector ids, object keys with their size), so a second run copies
nothing and an interrupted run resumes where it stopped. Verification compares counts on both
sides and a sample of vector rows field by field (dense vectors to float32 precision).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from eagle_rag.errors import ConflictError, InvalidInputError
from eagle_rag.migration import metadata, objects
from eagle_rag.migration.stores import Stores
from eagle_rag.migration.vectors import same_row

# (stage, item, done, total): the CLI turns these into progress bars.
Progress = Callable[[str, str, int, int], None]


def _quiet(stage: str, item: str, done: int, total: int) -> None:
    del stage, item, done, total


@dataclass(frozen=True, slots=True)
class Check:
    """One verified quantity: what the source has, and how much of it the target holds."""

    item: str
    source: int
    target: int

    @property
    def ok(self) -> bool:
        return self.source == self.target


@dataclass(slots=True)
class CopyReport:
    """What a run copied (per table, collection and ``objects``) and what verification found."""

    copied: dict[str, int] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    sampled: int = 0
    mismatched: list[str] = field(default_factory=list)

    @property
    def total_copied(self) -> int:
        return sum(self.copied.values())

    @property
    def verified(self) -> bool:
        return all(c.ok for c in self.checks) and not self.mismatched

    def to_dict(self) -> dict[str, object]:
        return {
            "copied": dict(self.copied),
            "total_copied": self.total_copied,
            "checks": [
                {"item": c.item, "source": c.source, "target": c.target, "ok": c.ok}
                for c in self.checks
            ],
            "sampled_vectors": self.sampled,
            "mismatched_vectors": list(self.mismatched),
            "verified": self.verified,
        }


def copy_namespace(
    source: Stores, target: Stores, *, progress: Progress = _quiet, sample: int = 50
) -> CopyReport:
    """Copy what the target lacks, then verify; the report says what moved and what matched."""
    if source.namespace != target.namespace:
        raise InvalidInputError(
            "source and target must serve the same namespace",
            source=source.namespace,
            target=target.namespace,
        )
    _refuse_the_same_stores(source, target)
    _refuse_knowledge_base_clashes(source, target)
    # Before anything is written: each collection, present ones too, takes the source's
    # encoder record or refuses the copy when it holds another encoder's vectors. Checked
    # after the metadata, the refusal left "completed" documents on the target without vectors.
    target.vectors.ensure([source.vectors.spec(n) for n in source.vectors.collections()])
    report = CopyReport()
    copy_metadata(source, target, report, progress)
    copy_vectors(source, target, report, progress)
    copy_objects(source, target, report, progress)
    verify(source, target, report, sample=sample)
    return report


def _refuse_the_same_stores(source: Stores, target: Stores) -> None:
    """Refuse a source that is the target's database and Milvus Database: nothing but the
    objects would move, and they would land without rows. It happens when the variables the
    target is meant to read (EAGLE_DATABASE_URL, MILVUS_URI) are set for the source too."""
    if source.database.url == target.database.url and (
        source.vectors.location == target.vectors.location
    ):
        raise InvalidInputError(
            "the source and the target are the same database and Milvus; unset "
            "EAGLE_DATABASE_URL and MILVUS_URI for the source (they set its stores too) and "
            "give the target in --to FILE",
            source=source.description,
            target=target.description,
        )


def _refuse_knowledge_base_clashes(source: Stores, target: Stores) -> None:
    refuse_knowledge_base_clashes(
        metadata.knowledge_base_ids(source.database, source.namespace),
        metadata.knowledge_base_ids(target.database, target.namespace),
    )


def refuse_knowledge_base_clashes(ours: Mapping[str, str], theirs: Mapping[str, str]) -> None:
    """Refuse, before anything is written, a knowledge base (name -> id) the target has under
    the same name but as another KB (another id): its documents would join the target's."""
    clashes = sorted(name for name, kb_id in ours.items() if theirs.get(name, kb_id) != kb_id)
    if clashes:
        raise ConflictError(
            "the target already has other knowledge bases of these names: "
            f"{', '.join(clashes)}; rename or delete one side's first",
            kb_names=clashes,
        )


def copy_metadata(source: Stores, target: Stores, report: CopyReport, progress: Progress) -> None:
    for table in metadata.namespaced_tables():
        total = metadata.count_rows(source.database, table, source.namespace)
        done = copied = 0
        progress("metadata", table.name, 0, total)
        for rows in metadata.read_rows(source.database, table, source.namespace):
            copied += metadata.write_missing(target.database, table, rows)
            done += len(rows)
            progress("metadata", table.name, done, total)
        report.copied[table.name] = copied


def copy_vectors(source: Stores, target: Stores, report: CopyReport, progress: Progress) -> None:
    names = source.vectors.collections()  # the target has them (copy_namespace)
    for name in names:
        total = source.vectors.count(name)
        done = copied = 0
        progress("vectors", name, 0, total)
        for rows in source.vectors.read(name):
            copied += target.vectors.write_missing(name, rows)
            done += len(rows)
            progress("vectors", name, done, total)
        report.copied[f"vectors:{name}"] = copied
    target.vectors.flush()


def copy_objects(source: Stores, target: Stores, report: CopyReport, progress: Progress) -> None:
    keys = objects.namespace_keys(source.objects, source.namespace)
    copied = 0
    progress("objects", "objects", 0, len(keys))
    for done, key in enumerate(keys, start=1):
        copied += objects.copy_missing(source.objects, target.objects, key)
        progress("objects", "objects", done, len(keys))
    report.copied["objects"] = copied


def verify(source: Stores, target: Stores, report: CopyReport, *, sample: int) -> None:
    """Each check counts the source's rows, vectors and objects and how many of them the
    target holds (by key), so a target that already held other data of the namespace verifies
    too; a sample of vectors is then compared field by field."""
    namespace = source.namespace
    for table in metadata.namespaced_tables():
        total = present = 0
        for rows in metadata.read_rows(source.database, table, namespace):
            total += len(rows)
            present += metadata.count_present(target.database, table, rows)
        report.checks.append(Check(table.name, total, present))
    for name in source.vectors.collections():
        total = present = 0
        for rows in source.vectors.read(name, fields=["id"]):
            ids = [str(row["id"]) for row in rows]
            total += len(ids)
            present += len(target.vectors.existing_ids(name, ids))
        report.checks.append(Check(f"vectors:{name}", total, present))
        sample_vectors(source, target, name, report, sample)
    keys = objects.namespace_keys(source.objects, namespace)
    present = sum(1 for key in keys if target.objects.exists(key))
    report.checks.append(Check("objects", len(keys), present))


def sample_vectors(
    source: Stores, target: Stores, collection: str, report: CopyReport, sample: int
) -> None:
    """Compare up to ``sample`` random rows of ``collection`` field by field."""
    ids = [
        str(row["id"]) for rows in source.vectors.read(collection, fields=["id"]) for row in rows
    ]
    chosen = random.Random(0).sample(ids, min(sample, len(ids)))
    left = source.vectors.get(collection, chosen)
    right = target.vectors.get(collection, chosen)
    for row_id in chosen:
        report.sampled += 1
        if row_id not in right or not same_row(left[row_id], right[row_id]):
            report.mismatched.append(f"{collection}:{row_id}")
