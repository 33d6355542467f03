"""The object store port and the values it returns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

CHUNK_SIZE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class StoredObject:
    """What a write produced: the key, its size in bytes and its SHA-256."""

    key: str
    size: int
    sha256: str


class Readable(Protocol):
    """What ``put`` reads from: any binary stream (a file, an upload, a capped or hashing
    wrapper around one)."""

    def read(self, size: int = -1, /) -> bytes: ...


class ObjectStore(Protocol):
    """Stores bytes under namespaced keys; reads and writes stream, never buffer whole files."""

    name: str

    def put(self, key: str, stream: Readable, *, content_type: str = ...) -> StoredObject:
        """Write ``stream`` to ``key`` (replacing it) and return its size and SHA-256."""

    def open(self, key: str) -> Iterator[bytes]:
        """Yield the object's bytes in chunks; NotFoundError if it does not exist."""

    def exists(self, key: str) -> bool: ...

    def size(self, key: str) -> int: ...

    def delete(self, key: str) -> None:
        """Remove ``key``; removing a missing key is not an error (deletes are retried)."""

    def delete_prefix(self, prefix: str) -> int:
        """Remove every object under ``prefix``; returns how many were removed."""

    def list(self, prefix: str) -> list[str]: ...

    def health(self) -> str:
        """Raise if the store cannot be used; return a short description otherwise."""

    def ensure_bucket(self) -> str:
        """Create the store's bucket (or directory) if missing, at start-up; say which it did."""
