"""Stream helpers shared by the stores: hash while copying, chunk by chunk."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from eagle_rag.storage.base import CHUNK_SIZE, Readable


class HashingReader:
    """Wraps a binary stream, counting and hashing the bytes as a consumer reads them."""

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self._digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._digest.update(data)
        self.size += len(data)
        return data

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def chunks(self) -> Iterator[bytes]:
        while data := self.read(CHUNK_SIZE):
            yield data
