"""Every ObjectStore backend passes the same suite: local directory and an S3 API server."""

from __future__ import annotations

import hashlib
import io
import uuid
from pathlib import Path

import pytest

from eagle_rag.errors import BackendUnavailableError, InvalidInputError, NotFoundError
from eagle_rag.settings import S3Settings
from eagle_rag.storage.base import ObjectStore
from eagle_rag.storage.factory import s3_client
from eagle_rag.storage.keys import object_key, validate_prefix
from eagle_rag.storage.local import LocalObjectStore
from eagle_rag.storage.s3 import S3ObjectStore
from tests.servers import free_port


def _s3_store(endpoint: str, bucket: str) -> S3ObjectStore:
    config = S3Settings(
        bucket=bucket, endpoint_url=endpoint, access_key_id="test", secret_access_key="test"
    )
    return S3ObjectStore(s3_client(config), bucket)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalObjectStore(tmp_path / "objects")
    s3 = _s3_store(request.getfixturevalue("s3_endpoint"), f"b-{uuid.uuid4().hex[:12]}")
    s3.ensure_bucket()
    return s3


class _Stream(io.RawIOBase):
    """A large deterministic byte stream produced on the fly (never held in memory)."""

    def __init__(self, size: int) -> None:
        self.remaining = size
        self.block = bytes(range(256)) * 4096  # 1 MiB pattern

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.remaining, len(self.block))
        buffer[:n] = self.block[:n]
        self.remaining -= n
        return n


def _read(store: ObjectStore, key: str) -> bytes:
    return b"".join(store.open(key))


def test_put_then_open_round_trips_with_size_and_hash(store: ObjectStore) -> None:
    key = object_key("core", "kb", "doc1", "report.pdf")
    data = b"%PDF-1.7 hello"
    stored = store.put(key, io.BytesIO(data), content_type="application/pdf")
    assert stored.size == len(data)
    assert stored.sha256 == hashlib.sha256(data).hexdigest()
    assert _read(store, key) == data
    assert store.exists(key) and store.size(key) == len(data)


def test_put_replaces_existing_object(store: ObjectStore) -> None:
    key = object_key("core", "kb", "doc1", "a.txt")
    store.put(key, io.BytesIO(b"old contents"))
    store.put(key, io.BytesIO(b"new"))
    assert _read(store, key) == b"new"


def test_large_objects_stream_in_chunks(store: ObjectStore) -> None:
    size = 12 * 1024 * 1024 + 17
    key = object_key("core", "kb", "big", "big.bin")
    stored = store.put(key, io.BufferedReader(_Stream(size)))
    assert stored.size == size
    digest, total, chunks = hashlib.sha256(), 0, 0
    for chunk in store.open(key):
        digest.update(chunk)
        total += len(chunk)
        chunks += 1
    assert total == size and chunks > 1
    assert digest.hexdigest() == stored.sha256


def test_missing_objects(store: ObjectStore) -> None:
    key = object_key("core", "kb", "nope", "missing.txt")
    assert not store.exists(key)
    with pytest.raises(NotFoundError):
        _read(store, key)
    with pytest.raises(NotFoundError):
        store.size(key)
    store.delete(key)  # deleting what is gone is fine: deletes are retried


def test_same_kb_in_two_namespaces_never_collides(store: ObjectStore) -> None:
    for namespace in ("core", "biomed", "core2"):
        store.put(object_key(namespace, "kb", "doc", "f.txt"), io.BytesIO(namespace.encode()))
    assert _read(store, object_key("biomed", "kb", "doc", "f.txt")) == b"biomed"
    assert store.list(validate_prefix("core")) == ["core/kb/doc/f.txt"]
    assert store.delete_prefix(validate_prefix("core", "kb")) == 1
    assert not store.exists(object_key("core", "kb", "doc", "f.txt"))
    assert store.exists(object_key("core2", "kb", "doc", "f.txt"))
    assert store.exists(object_key("biomed", "kb", "doc", "f.txt"))


def test_delete_prefix_removes_a_documents_objects(store: ObjectStore) -> None:
    for name in ("original.pdf", "tile-1.png", "tile-2.png"):
        store.put(object_key("core", "kb", "doc9", name), io.BytesIO(b"x"))
    store.put(object_key("core", "kb", "doc10", "original.pdf"), io.BytesIO(b"y"))
    assert store.delete_prefix(validate_prefix("core", "kb", "doc9")) == 3
    assert store.list(validate_prefix("core", "kb")) == ["core/kb/doc10/original.pdf"]


HOSTILE_KEYS = [
    "core/../etc/passwd",
    "/etc/passwd",
    "core//x",
    "core/kb/a\x00b",
    "core/%2e%2e/x",
    "core/..%2fx/y",
    "core/kb\\..\\x/y",
    "core/%252e%252e/y",
    "core/ .. /y",
]


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_hostile_keys_are_refused_and_nothing_is_written(
    store: ObjectStore, key: str, tmp_path: Path
) -> None:
    with pytest.raises(InvalidInputError):
        store.put(key, io.BytesIO(b"pwned"))
    with pytest.raises(InvalidInputError):
        store.open(key)
    assert store.list(validate_prefix("core")) == []


def test_health(store: ObjectStore) -> None:
    assert store.health()


@pytest.mark.integration
def test_unreachable_s3_is_a_backend_error() -> None:
    dead = _s3_store(f"http://127.0.0.1:{free_port()}", "bucket")
    with pytest.raises(BackendUnavailableError, match="S3"):
        dead.put(object_key("core", "kb", "d", "f"), io.BytesIO(b"x"))


@pytest.mark.integration
def test_start_up_creates_a_missing_s3_bucket_and_says_which(s3_endpoint: str) -> None:
    store = _s3_store(s3_endpoint, f"new-{uuid.uuid4().hex[:12]}")
    assert store.health().endswith("does not exist yet: start-up creates it")
    assert store.ensure_bucket().endswith("created")
    assert store.ensure_bucket().endswith("verified")
    assert store.health().endswith("exists")
    stored = store.put(object_key("core", "kb", "d", "f"), io.BytesIO(b"x"))
    assert stored.size == 1


def test_start_up_creates_the_local_directory_and_says_which(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "fresh")
    assert store.ensure_bucket().endswith("created") and (tmp_path / "fresh").is_dir()
    assert store.ensure_bucket().endswith("verified")


def test_local_deletes_leave_no_empty_folders_and_writes_still_land(tmp_path: Path) -> None:
    """A refused upload, a deleted document or KB left empty folders under objects/."""
    store = LocalObjectStore(tmp_path / "objects")
    store.put(object_key("core", "kb", "doc1", "a.pdf"), io.BytesIO(b"a"))
    store.put(object_key("core", "kb", "doc2", "b.pdf"), io.BytesIO(b"b"))
    store.delete(object_key("core", "kb", "doc1", "a.pdf"))
    assert not (tmp_path / "objects/core/kb/doc1").exists()
    assert (tmp_path / "objects/core/kb/doc2/b.pdf").is_file()  # a folder in use stays
    store.delete_prefix(validate_prefix("core", "kb"))
    assert list((tmp_path / "objects").iterdir()) == []  # the root itself stays
    store.put(object_key("core", "kb", "doc3", "c.pdf"), io.BytesIO(b"c"))  # recreated
    assert store.list(validate_prefix("core", "kb")) == ["core/kb/doc3/c.pdf"]


@pytest.mark.integration
def test_an_s3_bucket_that_cannot_be_checked_is_a_backend_error() -> None:
    dead = _s3_store(f"http://127.0.0.1:{free_port()}", "bucket")
    with pytest.raises(BackendUnavailableError, match="head_bucket"):
        dead.ensure_bucket()
