"""The file where an instance keeps what the biomed plugin learned from its corpus
(``<data_dir>/biomed/corpus.json``): abbreviation pair counts per knowledge base and entity
chunk counts.

Pairs are kept per knowledge base because a long form is text copied from a document: a caller
who may not read that KB must not be shown it, nor have its definitions re-route its queries.
A file of format 1 (one instance-wide book) still loads: its pairs are kept, untouched, as
``unscoped`` and name nothing, since no one can tell which KB taught them, and lending them to
every KB would go on showing one KB's text to callers of another.

Several processes share it (the API and Celery workers of the production profile), so a save
adds this process's counts since its last save to what is on disk, under an exclusive lock,
instead of overwriting it; each process reloads the file when its stamp changes. Writes are
atomic (a temporary file renamed over it), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX (Windows): saves are not serialised between processes there
    fcntl = None  # type: ignore[assignment]

FORMAT_VERSION = 2
Stamp = tuple[int, int, int]  # (mtime_ns, size, inode): every atomic write changes it


@dataclass(slots=True)
class CorpusCounts:
    """Counts the book keeps: per knowledge base and short form, how often each long form was
    seen; how many chunks named each entity; how many chunks were counted."""

    pairs: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # kb → short → …
    entity_chunks: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    unscoped: dict[str, dict[str, int]] = field(default_factory=dict)  # a format-1 file's pairs

    def __bool__(self) -> bool:
        return bool(self.pairs or self.entity_chunks or self.chunks)

    def copy(self) -> CorpusCounts:
        pairs = {kb: _copy_forms(shorts) for kb, shorts in self.pairs.items()}
        return CorpusCounts(pairs, dict(self.entity_chunks), self.chunks, self.unscoped)

    def add(self, other: CorpusCounts, *, max_short_forms: int) -> None:
        """Add ``other``'s counts to these (a new short form only while its KB is under the
        cap)."""
        for kb, shorts in other.pairs.items():
            book = self.pairs.setdefault(kb, {})
            for short, forms in shorts.items():
                if short not in book and len(book) >= max_short_forms:
                    continue
                mine = book.setdefault(short, {})
                for long, count in forms.items():
                    mine[long] = mine.get(long, 0) + count
        for concept_id, count in other.entity_chunks.items():
            self.entity_chunks[concept_id] = self.entity_chunks.get(concept_id, 0) + count
        self.chunks += other.chunks


class CorpusFile:
    """Reads, and merges into, one corpus file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_path = path.with_name(path.name + ".lock")

    def stamp(self) -> Stamp | None:
        """The file's current stamp; None when there is no file."""
        try:
            return _stamp(self.path.stat())
        except OSError:
            return None

    def read(self) -> tuple[CorpusCounts, Stamp | None]:
        """What the file holds, and the stamp of what was read. A missing or damaged file
        reads as empty: what it held is relearned from the next ingests, never fatal."""
        try:
            with self.path.open(encoding="utf-8") as handle:
                stamp = _stamp(os.fstat(handle.fileno()))
                return _parse(json.load(handle)), stamp
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return CorpusCounts(), self.stamp()

    def merge(self, delta: CorpusCounts, *, max_short_forms: int) -> tuple[CorpusCounts, Stamp]:
        """Add ``delta`` to the file's counts and write them back, holding the lock so that
        two processes saving at once both count; returns the merged counts and their stamp."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._exclusive():
            merged, _ = self.read()
            merged.add(delta, max_short_forms=max_short_forms)
            temporary = self.path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            temporary.write_text(json.dumps(_dump(merged), ensure_ascii=False), "utf-8")
            temporary.replace(self.path)
            return merged, _stamp(self.path.stat())

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        # flock locks an open file description, so two books in one process exclude each
        # other too. The lock file stays: removing it would let a waiter lock a stale inode.
        with self._lock_path.open("a+b") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _stamp(status: os.stat_result) -> Stamp:
    return (status.st_mtime_ns, status.st_size, status.st_ino)


def _copy_forms(shorts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {short: dict(forms) for short, forms in shorts.items()}


def _parse(data: object) -> CorpusCounts:
    if not isinstance(data, dict) or not isinstance(data.get("counts"), dict):
        raise ValueError("not a biomed corpus file")
    by_kb = data.get("kb_counts") or {}
    pairs = {str(kb): _parse_forms(shorts) for kb, shorts in dict(by_kb).items()}
    entity_chunks = {str(k): int(v) for k, v in dict(data.get("entity_chunks") or {}).items()}
    unscoped = _parse_forms(data["counts"])
    return CorpusCounts(pairs, entity_chunks, int(data.get("chunks") or 0), unscoped)


def _parse_forms(shorts: object) -> dict[str, dict[str, int]]:
    if not isinstance(shorts, dict):
        return {}
    return {
        str(short): {str(lf): max(1, int(c)) for lf, c in forms.items()}
        for short, forms in shorts.items()
        if isinstance(forms, dict)
    }


def _dump(counts: CorpusCounts) -> dict[str, object]:
    return {
        "version": FORMAT_VERSION,
        "counts": counts.unscoped,  # format 1's instance-wide pairs, kept and unused
        "kb_counts": counts.pairs,
        "entity_chunks": counts.entity_chunks,
        "chunks": counts.chunks,
    }
