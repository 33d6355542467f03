"""S3 / MinIO object store (boto3): the production backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eagle_rag.errors import BackendUnavailableError, NotFoundError
from eagle_rag.storage.base import CHUNK_SIZE, Readable, StoredObject
from eagle_rag.storage.hashing import HashingReader
from eagle_rag.storage.keys import validate_key

_MISSING = {"404", "NoSuchKey", "NotFound"}


class S3ObjectStore:
    """Objects in one bucket; uploads stream through boto3's multipart transfer."""

    name = "s3"

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self.bucket = bucket

    def put(
        self, key: str, stream: Readable, *, content_type: str = "application/octet-stream"
    ) -> StoredObject:
        validate_key(key)
        reader = HashingReader(stream)
        self._call(
            self._client.upload_fileobj,
            reader,
            self.bucket,
            key,
            ExtraArgs={"ContentType": content_type},
        )
        return StoredObject(key, reader.size, reader.sha256)

    def open(self, key: str) -> Iterator[bytes]:
        validate_key(key)
        response = self._call(self._client.get_object, Bucket=self.bucket, Key=key, missing=key)
        return _iter_body(response["Body"])

    def exists(self, key: str) -> bool:
        try:
            self.size(key)
        except NotFoundError:
            return False
        return True

    def size(self, key: str) -> int:
        validate_key(key)
        head = self._call(self._client.head_object, Bucket=self.bucket, Key=key, missing=key)
        return int(head["ContentLength"])

    def delete(self, key: str) -> None:
        validate_key(key)
        self._call(self._client.delete_object, Bucket=self.bucket, Key=key)

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list(prefix)
        for start in range(0, len(keys), 1000):  # the DeleteObjects limit
            batch = [{"Key": k} for k in keys[start : start + 1000]]
            self._call(
                self._client.delete_objects,
                Bucket=self.bucket,
                Delete={"Objects": batch, "Quiet": True},
            )
        return len(keys)

    def list(self, prefix: str) -> list[str]:
        paginator = self._client.get_paginator("list_objects_v2")
        keys: list[str] = []
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                keys.extend(item["Key"] for item in page.get("Contents", []))
        except Exception as exc:
            raise BackendUnavailableError(f"S3 list failed: {exc}", backend="s3") from exc
        return sorted(keys)

    def ensure_bucket(self) -> str:
        """Create the bucket if it does not exist (first deployments); called at start-up."""
        if self._bucket_exists():
            return f"s3 bucket {self.bucket} verified"
        self._call(self._client.create_bucket, Bucket=self.bucket)
        return f"s3 bucket {self.bucket} created"

    def health(self) -> str:
        if self._bucket_exists():
            return f"s3 bucket {self.bucket} exists"
        return f"s3 bucket {self.bucket} does not exist yet: start-up creates it"

    def _bucket_exists(self) -> bool:
        """True or False; anything but a missing bucket (denied, unreachable) raises."""
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
            if code in (*_MISSING, "NoSuchBucket"):
                return False
            raise BackendUnavailableError(
                f"S3 head_bucket failed: {exc}", backend="s3", bucket=self.bucket
            ) from exc
        return True

    def _call(self, method: Any, *args: Any, missing: str | None = None, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
            if missing is not None and code in _MISSING:
                raise NotFoundError("object not found", key=missing) from None
            raise BackendUnavailableError(
                f"S3 {getattr(method, '__name__', 'call')} failed: {exc}",
                backend="s3",
                bucket=self.bucket,
            ) from exc


def _iter_body(body: Any) -> Iterator[bytes]:
    try:
        yield from body.iter_chunks(CHUNK_SIZE)
    finally:
        body.close()
