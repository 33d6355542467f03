"""Build the configured object store (no I/O: boto3 clients connect on first call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eagle_rag.settings import S3Settings, Settings
from eagle_rag.storage.base import ObjectStore
from eagle_rag.storage.local import LocalObjectStore
from eagle_rag.storage.s3 import S3ObjectStore


def s3_client(config: S3Settings) -> Any:
    """A boto3 client for AWS, MinIO or any S3 API server (path-style with an endpoint)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=config.endpoint_url or None,
        region_name=config.region,
        aws_access_key_id=config.access_key_id.get_secret_value() or None,
        aws_secret_access_key=config.secret_access_key.get_secret_value() or None,
        config=Config(
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            s3={"addressing_style": "path" if config.endpoint_url else "auto"},
        ),
    )


def build_object_store(settings: Settings) -> ObjectStore:
    storage = settings.storage
    if storage.backend == "s3":
        return S3ObjectStore(s3_client(storage.s3), storage.s3.bucket)
    return LocalObjectStore(Path(storage.local_dir))
