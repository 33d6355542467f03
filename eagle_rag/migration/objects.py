"""Stored objects of one namespace, streamed from one object store to another."""

from __future__ import annotations

import io
from collections.abc import Iterator

from eagle_rag.storage.base import ObjectStore


class ChunkStream(io.RawIOBase):
    """A readable file over an iterator of byte chunks (what ``ObjectStore.open`` yields)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def reader(store: ObjectStore, key: str) -> io.BufferedReader:
    return io.BufferedReader(ChunkStream(store.open(key)), buffer_size=1024 * 1024)


def namespace_keys(store: ObjectStore, namespace: str) -> list[str]:
    return store.list(f"{namespace}/")


def copy_missing(source: ObjectStore, target: ObjectStore, key: str) -> bool:
    """Copy ``key`` unless the target has it with the same size; True when it copied."""
    size = source.size(key)
    if target.exists(key) and target.size(key) == size:
        return False
    with reader(source, key) as stream:
        target.put(key, stream)
    return True
