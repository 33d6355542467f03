"""Vector rows of one namespace's collections, read with Milvus query iterators.

A row is carried with every stored field except the BM25 sparse vector, which Milvus computes
from ``sparse_text`` and refuses as input: the target's BM25 function rebuilds it from the same
``sparse_text`` (the client-side tokens), so BM25 ranks the same rows the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from pymilvus import DataType

from eagle_rag.index.collections import (
    DENSE_FIELD,
    ENCODER_PROPERTY,
    SPARSE_FIELD,
    CollectionSpec,
    Kind,
    build_schema,
)
from eagle_rag.index.filters import in_
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore

READ_BATCH = 500
_ID_LOOKUP = 500


class VectorSide:
    """One namespace's Milvus Database, as a migration reads and writes it."""

    def __init__(self, pool: MilvusClientPool, store: MilvusVectorStore) -> None:
        self._pool = pool
        self.store = store

    @property
    def _client(self) -> Any:
        return self._pool.client(self.store.db_name)

    @property
    def location(self) -> tuple[str, str]:
        """Where the vectors live: the Milvus URI and Database."""
        return (str(self._pool.uri), str(self.store.db_name))

    def collections(self) -> list[str]:
        return self.store.collections()

    def fields(self, collection: str) -> list[str]:
        """Every field a row is written with (the BM25 output is derived, not written)."""
        described = self._client.describe_collection(collection)
        return [f["name"] for f in described["fields"] if not _derived(f)]

    def spec(self, collection: str) -> CollectionSpec:
        """The collection's spec, rebuilt from its schema (plugin collections included), with
        the encoder recorded on it: the copy's vectors are that encoder's."""
        described = self._client.describe_collection(collection)
        fields = {f["name"]: f for f in described["fields"]}
        kind: Kind = "text" if "text" in fields else "visual"
        base = set(build_schema_fields(kind))
        extra = tuple(
            name
            for name, f in fields.items()
            if name not in base and f["type"] == DataType.VARCHAR and not _derived(f)
        )
        dim = int(fields[DENSE_FIELD]["params"]["dim"])
        encoder = str((described.get("properties") or {}).get(ENCODER_PROPERTY) or "")
        return CollectionSpec(collection, kind, dim, extra, encoder)

    def ensure(self, specs: Sequence[CollectionSpec]) -> None:
        self.store.ensure_collections(specs)

    def count(self, collection: str) -> int:
        return self.store.count(collection)

    def read(
        self,
        collection: str,
        *,
        batch: int = READ_BATCH,
        fields: Sequence[str] | None = None,
    ) -> Iterator[list[dict[str, Any]]]:
        """Every row, ``batch`` at a time, with ``fields`` (default: all written fields)."""
        # A store opened by this process alone (migrate-store, export: Milvus Lite's file from
        # a fresh process) has its collections released; a query needs them loaded.
        self._client.load_collection(collection)
        iterator = self._client.query_iterator(
            collection,
            batch_size=batch,
            filter="",
            output_fields=list(fields or self.fields(collection)),
        )
        try:
            while True:
                rows = iterator.next()
                if not rows:
                    return
                yield [_plain(row) for row in rows]
        finally:
            iterator.close()

    def existing_ids(self, collection: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _ID_LOOKUP):
            part = list(ids[start : start + _ID_LOOKUP])
            rows = self.store.query(
                collection, in_("id", part), output_fields=["id"], limit=len(part)
            )
            found.update(str(row["id"]) for row in rows)
        return found

    def get(self, collection: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        rows = self.store.query(
            collection, in_("id", list(ids)), output_fields=self.fields(collection), limit=len(ids)
        )
        return {str(row["id"]): _plain(row) for row in rows}

    def write_missing(self, collection: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Upsert the rows whose id the target lacks, exactly as read (``sparse_text`` too)."""
        present = self.existing_ids(collection, [str(row["id"]) for row in rows])
        missing = [dict(row) for row in rows if str(row["id"]) not in present]
        for start in range(0, len(missing), 256):
            self._client.upsert(collection, missing[start : start + 256])
        return len(missing)

    def flush(self) -> None:
        self.store.flush()


def build_schema_fields(kind: Kind) -> list[str]:
    """The field names of a base schema of ``kind`` (without plugin extras)."""
    schema = build_schema(CollectionSpec("probe", kind, 2))
    return [field.name for field in schema.fields]


def _derived(field: Mapping[str, Any]) -> bool:
    return bool(field.get("is_function_output")) or field["name"] == SPARSE_FIELD


def same_row(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """Equal fields, dense vectors equal to float32 precision."""
    if set(left) != set(right):
        return False
    for key, value in left.items():
        if key == DENSE_FIELD:
            if not np.allclose(np.asarray(value), np.asarray(right[key]), atol=1e-6):
                return False
        elif value != right[key]:
            return False
    return True


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    """Plain Python values (pymilvus hands back numpy floats and protobuf-backed lists)."""
    plain: dict[str, Any] = {}
    for key, value in row.items():
        if key == DENSE_FIELD:
            plain[key] = [float(x) for x in value]
        elif isinstance(value, list | tuple):
            plain[key] = [v.item() if hasattr(v, "item") else v for v in value]
        elif hasattr(value, "item"):
            plain[key] = value.item()
        else:
            plain[key] = value
    return plain
