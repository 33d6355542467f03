"""Local directory object store: the embedded default."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from eagle_rag.errors import BackendUnavailableError, InvalidInputError, NotFoundError
from eagle_rag.storage.base import CHUNK_SIZE, Readable, StoredObject
from eagle_rag.storage.hashing import HashingReader
from eagle_rag.storage.keys import validate_key


class LocalObjectStore:
    """Objects as files under ``root``; writes go to a temp file first, then rename (atomic)."""

    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        validate_key(key)
        root = self.root.resolve()
        path = (root / key).resolve()
        # Defence in depth: validate_key already forbids traversal, symlinks could still lead out.
        if root not in path.parents:
            raise InvalidInputError("object key resolves outside the store", key=key)
        return path

    def put(
        self, key: str, stream: Readable, *, content_type: str = "application/octet-stream"
    ) -> StoredObject:
        path = self._path(key)
        reader = HashingReader(stream)
        fd, tmp_name = self._temp_file(path, key)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in reader.chunks():
                    out.write(chunk)
            Path(tmp_name).replace(path)
        except BaseException as exc:  # a refused upload (over the cap) or a failed write
            Path(tmp_name).unlink(missing_ok=True)
            self._prune(path.parent)
            if isinstance(exc, OSError):
                raise _unavailable("write", key, exc) from exc
            raise
        return StoredObject(key, reader.size, reader.sha256)

    @staticmethod
    def _temp_file(path: Path, key: str) -> tuple[int, str]:
        """A temp file beside ``path``. A delete prunes folders it empties, so one may vanish
        between the mkdir and the mkstemp: that is tried again, never reported."""
        for attempt in range(3):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                return tempfile.mkstemp(dir=path.parent, prefix=".upload-")
            except FileNotFoundError as exc:
                if attempt == 2:
                    raise _unavailable("write", key, exc) from exc
            except OSError as exc:
                raise _unavailable("write", key, exc) from exc
        raise AssertionError("unreachable")

    def open(self, key: str) -> Iterator[bytes]:
        path = self._path(key)
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            raise NotFoundError("object not found", key=key) from None
        return _read_chunks(handle)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            raise NotFoundError("object not found", key=key) from None

    def delete(self, key: str) -> None:
        path = self._path(key)
        path.unlink(missing_ok=True)
        self._prune(path.parent)

    def _prune(self, folder: Path) -> None:
        """Remove the folders a delete left empty (a document's, then its KB's), up to the
        root: a refused upload or a deleted KB must not leave folders behind. rmdir refuses a
        folder that is not empty, so a concurrent write is never lost."""
        root = self.root.resolve()
        while folder != root and root in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list(prefix)
        for key in keys:
            self.delete(key)
        return len(keys)

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix.rstrip("/") + "/x").parent
        if not base.is_dir():
            return []
        root = self.root.resolve()
        return sorted(
            str(p.relative_to(root))
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".upload-")
        )

    def ensure_bucket(self) -> str:
        """The local store's "bucket" is its directory."""
        existed = self.root.is_dir()
        self.health()
        return f"local {self.root} {'verified' if existed else 'created'}"

    def health(self) -> str:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".probe-"):
                pass
        except OSError as exc:
            raise BackendUnavailableError(
                f"object directory is not writable: {exc}", backend="local"
            ) from exc
        return f"local {self.root}"


def _unavailable(operation: str, key: str, exc: OSError) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"local object store {operation} failed: {exc}", backend="local", key=key
    )


def _read_chunks(handle: BinaryIO) -> Iterator[bytes]:
    with handle:
        while data := handle.read(CHUNK_SIZE):
            yield data
