"""``eagle-rag export`` / ``import``: one namespace as a single tar.gz file.

Layout: ``manifest.json`` first (format, namespace, collection specs), then
``metadata/<table>/<n>.jsonl`` in dependency order, ``vectors/<collection>/<n>.jsonl`` and
``objects/<key>``, and ``summary.json`` last (the counts written). Import reads the file in one
pass and writes only what the target lacks, like ``migrate-store``, so importing twice is
harmless and an interrupted import can be run again.
"""

from __future__ import annotations

import io
import json
import secrets
import tarfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO, Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.index.collections import CollectionSpec
from eagle_rag.migration import metadata, objects
from eagle_rag.migration.copier import (
    Check,
    CopyReport,
    Progress,
    _quiet,
    refuse_knowledge_base_clashes,
)
from eagle_rag.migration.stores import Stores

FORMAT = "eagle-rag-export"
VERSION = 1
MANIFEST = "manifest.json"
SUMMARY = "summary.json"


def export_archive(source: Stores, path: Path, *, progress: Progress = _quiet) -> CopyReport:
    """Write the namespace's metadata, vectors and objects to ``path`` (tar.gz).

    The archive is written beside ``path`` under a temporary name and renamed once complete:
    an export that fails or is killed leaves no truncated archive under the backup's name, and
    an earlier backup there stays whole until the new one replaces it."""
    _refuse_empty(source)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        report = _write_archive(source, partial, progress)
        partial.replace(path)
    except OSError as exc:
        raise InvalidInputError(f"cannot write the export {path}: {exc}", path=str(path)) from exc
    finally:
        partial.unlink(missing_ok=True)
    return report


def _refuse_empty(source: Stores) -> None:
    """A namespace with no rows and no vectors (a misspelt one: "coer") made an archive of
    zeros, exit 0, that an operator would take for a backup."""
    rows = any(
        metadata.count_rows(source.database, table, source.namespace)
        for table in metadata.namespaced_tables()
    )
    if not rows and not source.vectors.collections():
        raise InvalidInputError(
            f"namespace {source.namespace!r} holds nothing to export (no knowledge base, "
            "document or vector): check its name",
            namespace=source.namespace,
        )


def _write_archive(source: Stores, path: Path, progress: Progress) -> CopyReport:
    report = CopyReport()
    collections = source.vectors.collections()
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "namespace": source.namespace,
        "created_at": datetime.now(UTC).isoformat(),
        "collections": [asdict(source.vectors.spec(name)) for name in collections],
    }
    with tarfile.open(path, "w:gz") as tar:
        _add_bytes(tar, MANIFEST, _json(manifest))
        for table in metadata.namespaced_tables():
            total = metadata.count_rows(source.database, table, source.namespace)
            done = 0
            for number, rows in enumerate(
                metadata.read_rows(source.database, table, source.namespace)
            ):
                _add_bytes(tar, f"metadata/{table.name}/{number:06d}.jsonl", _jsonl(rows))
                done += len(rows)
                progress("metadata", table.name, done, total)
            report.copied[table.name] = done
        for name in collections:
            total = source.vectors.count(name)
            done = 0
            for number, rows in enumerate(source.vectors.read(name)):
                _add_bytes(tar, f"vectors/{name}/{number:06d}.jsonl", _jsonl(rows))
                done += len(rows)
                progress("vectors", name, done, total)
            report.copied[f"vectors:{name}"] = done
        keys = objects.namespace_keys(source.objects, source.namespace)
        for done, key in enumerate(keys, start=1):
            info = tarfile.TarInfo(f"objects/{key}")
            info.size = source.objects.size(key)
            with objects.reader(source.objects, key) as stream:
                tar.addfile(info, stream)
            progress("objects", "objects", done, len(keys))
        report.copied["objects"] = len(keys)
        _add_bytes(tar, SUMMARY, _json({"counts": report.copied}))
    return report


def import_archive(
    path: Path,
    open_target: Callable[[str], AbstractContextManager[Stores]],
    *,
    progress: Progress = _quiet,
) -> CopyReport:
    """Write what the target lacks from an export; ``open_target(namespace)`` opens it.

    The whole archive is read once before anything is written: an export cut short (killed,
    a disk that filled up, a partial copy) used to be imported up to the break, leaving
    documents without their vectors or originals."""
    knowledge_bases = _verify_archive(path)
    try:
        with tarfile.open(path, "r|*") as tar:
            return _import(tar, path, open_target, progress, knowledge_bases)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise InvalidInputError(
            f"{path} could not be read to its end on the second reading: {exc}", path=str(path)
        ) from exc


def _verify_archive(path: Path) -> dict[str, str]:
    """Refuse, before anything is written, an archive that does not read to its end or does
    not hold the rows, vectors and objects its summary counts. Returns its knowledge bases,
    name -> id."""
    knowledge_bases: dict[str, str] = {}
    try:
        with tarfile.open(path, "r|*") as tar:
            members = iter(tar)
            manifest = _read_manifest(tar, next(members, None), path)
            namespace = str(manifest["namespace"])
            found, summary = _count_members(tar, members, namespace, knowledge_bases)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise InvalidInputError(
            f"{path} is not a readable Eagle-RAG export: {exc}; nothing was written",
            path=str(path),
        ) from exc
    if summary is None:
        raise InvalidInputError(
            f"{path} is an incomplete Eagle-RAG export (it ends before its {SUMMARY}: was the "
            "export interrupted?); nothing was written",
            path=str(path),
        )
    differ = {k: f"{found.get(k, 0)} of {v}" for k, v in summary.items() if found.get(k, 0) != v}
    if differ:
        raise InvalidInputError(
            f"{path} does not hold what its {SUMMARY} counts; nothing was written",
            path=str(path),
            found=differ,
        )
    return knowledge_bases


def _count_members(
    tar: tarfile.TarFile,
    members: Iterator[tarfile.TarInfo],
    namespace: str,
    knowledge_bases: dict[str, str],
) -> tuple[dict[str, int], dict[str, int] | None]:
    """Rows per table and collection and the objects, read to the end; and the summary. A row
    or object of another namespace (an edited or hostile archive) is refused here, before
    anything is written: found while importing, it stopped the import half-way. The knowledge
    bases' names and ids go into ``knowledge_bases``."""
    found: dict[str, int] = {}
    summary: dict[str, int] | None = None
    for member in members:
        handle = tar.extractfile(member) if member.isfile() else None
        if handle is None:
            continue
        kind, _, rest = member.name.partition("/")
        if member.name == SUMMARY:
            summary = {k: int(v) for k, v in json.loads(handle.read())["counts"].items()}
        elif kind in ("metadata", "vectors"):
            item = rest.split("/", 1)[0]
            data = handle.read()
            if kind == "metadata":
                rows = _rows(data)
                _check_namespace(rows, namespace, item)
                if item == "knowledge_bases":
                    knowledge_bases.update({str(r["name"]): str(r["id"]) for r in rows})
            item = item if kind == "metadata" else f"vectors:{item}"
            found[item] = found.get(item, 0) + sum(1 for _ in _lines(data))
        elif kind == "objects":
            _check_object_key(rest, namespace)
            while handle.read(1024 * 1024):  # read through: a cut shows as an error here
                pass
            found["objects"] = found.get("objects", 0) + 1
    return found, summary


def _import(
    tar: tarfile.TarFile,
    path: Path,
    open_target: Callable[[str], AbstractContextManager[Stores]],
    progress: Progress,
    knowledge_bases: dict[str, str],
) -> CopyReport:
    report = CopyReport()
    members = iter(tar)
    manifest = _read_manifest(tar, next(members, None), path)
    held = _Held()
    summary: dict[str, int] = {}
    with open_target(str(manifest["namespace"])) as target:
        # A KB re-created under an exported name since: its rows would clash mid-import.
        refuse_knowledge_base_clashes(
            knowledge_bases, metadata.knowledge_base_ids(target.database, target.namespace)
        )
        specs = [CollectionSpec(**_spec(s)) for s in manifest.get("collections", [])]
        # Present collections too: see copier.copy_namespace.
        target.vectors.ensure(specs)
        for member in members:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is None:
                continue
            if member.name == SUMMARY:
                summary = {k: int(v) for k, v in json.loads(handle.read())["counts"].items()}
                continue
            _import_member(member, handle, target, report, held, progress)
        target.vectors.flush()
        held.count_vectors(target)
    # Counted on the target by key once written: the "on target" column was the archive's
    # own summary, so an import that lost rows still read "ok".
    report.checks.extend(Check(item, n, held.counts.get(item, 0)) for item, n in summary.items())
    return report


@dataclass(slots=True)
class _Held:
    """How many of the archive's rows, vectors and objects the target holds, by item."""

    counts: dict[str, int] = field(default_factory=dict)
    vector_ids: dict[str, list[str]] = field(default_factory=dict)

    def add(self, item: str, present: int) -> None:
        self.counts[item] = self.counts.get(item, 0) + present

    def count_vectors(self, target: Stores) -> None:
        """After the flush: the vectors of each collection the target holds."""
        for name, ids in self.vector_ids.items():
            self.add(f"vectors:{name}", len(target.vectors.existing_ids(name, ids)))


def _import_member(
    member: tarfile.TarInfo,
    handle: IO[bytes],
    target: Stores,
    report: CopyReport,
    held: _Held,
    progress: Progress,
) -> None:
    kind, _, rest = member.name.partition("/")
    if kind == "metadata":
        table = metadata.table_named(rest.split("/", 1)[0])
        rows = _rows(handle.read())
        _check_namespace(rows, target.namespace, table.name)
        copied = metadata.write_missing(target.database, table, rows)
        held.add(table.name, metadata.count_present(target.database, table, rows))
        _tally(report, table.name, copied, progress, "metadata")
    elif kind == "vectors":
        name = rest.split("/", 1)[0]
        rows = _rows(handle.read())
        copied = target.vectors.write_missing(name, rows)
        held.vector_ids.setdefault(name, []).extend(str(row["id"]) for row in rows)
        _tally(report, f"vectors:{name}", copied, progress, "vectors")
    elif kind == "objects":
        _check_object_key(rest, target.namespace)
        copied = 0
        if not (target.objects.exists(rest) and target.objects.size(rest) == member.size):
            target.objects.put(rest, handle)
            copied = 1
        held.add("objects", int(target.objects.size(rest) == member.size))
        _tally(report, "objects", copied, progress, "objects")


def _check_object_key(key: str, namespace: str) -> None:
    """An object key under the namespace's prefix, with no segment that climbs out of it
    (``core/../biomed/...``)."""
    parts = key.split("/")
    if parts[0] != namespace or len(parts) < 2 or any(p in ("", ".", "..") for p in parts[1:]):
        raise InvalidInputError(
            "an object of another namespace in the export; nothing was written", key=key[:200]
        )


def _check_namespace(rows: list[dict[str, Any]], namespace: str, table: str) -> None:
    """The manifest's namespace picks the target, so a row of another one (an edited or a
    hostile archive) would be written into that other namespace: refused, as objects are."""
    others = {str(r.get(metadata.NAMESPACE_COLUMN)) for r in rows} - {namespace}
    if others:
        raise InvalidInputError(
            f"rows of another namespace in the export's {table}; nothing was written",
            namespaces=sorted(others),
        )


def _tally(report: CopyReport, item: str, copied: int, progress: Progress, stage: str) -> None:
    report.copied[item] = report.copied.get(item, 0) + copied
    progress(stage, item, report.copied[item], 0)


def _read_manifest(
    tar: tarfile.TarFile, member: tarfile.TarInfo | None, path: Path
) -> dict[str, Any]:
    handle = tar.extractfile(member) if member is not None and member.name == MANIFEST else None
    if handle is None:
        raise InvalidInputError(f"{path} has no {MANIFEST} first", path=str(path))
    manifest: dict[str, Any] = json.loads(handle.read())
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise InvalidInputError(
            f"{path} is not a version-{VERSION} Eagle-RAG export",
            format=manifest.get("format"),
            version=manifest.get("version"),
        )
    return manifest


def _spec(raw: dict[str, Any]) -> dict[str, Any]:
    return {**raw, "extra_varchar_fields": tuple(raw.get("extra_varchar_fields", ()))}


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"cannot export a {type(value).__name__}")


def _json(data: Any) -> bytes:
    return json.dumps(data, default=_default, ensure_ascii=False).encode()


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(_json(row) + b"\n" for row in rows)


def _rows(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _lines(data)]


def _lines(data: bytes) -> Iterator[bytes]:
    return (line for line in data.splitlines() if line.strip())
