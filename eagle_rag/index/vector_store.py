"""The vector store port and its Milvus implementation (Lite or server, one namespace each).

A store is bound to one namespace, i.e. one Milvus Database, when it is built. Callers hand it
rows with text and a dense vector; the store derives the BM25 input itself, so dense and sparse
can never disagree about what a row says.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pymilvus import MilvusClient

from eagle_rag.errors import (
    BackendUnavailableError,
    EagleError,
    InvalidInputError,
    VectorStoreError,
)
from eagle_rag.index.collections import (
    BM25_TEXT_KEY,
    DENSE_FIELD,
    ENCODER_PROPERTY,
    NAMESPACE_PROPERTY,
    SPARSE_FIELD,
    SPARSE_TEXT_FIELD,
    TEXT_COLLECTION,
    VISUAL_COLLECTION,
    CollectionSpec,
    IndexSettings,
    build_index_params,
    build_schema,
    text_fields,
    visual_fields,
)
from eagle_rag.index.filters import Filter, eq, in_
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.sparse import encode_for_bm25

logger = logging.getLogger(__name__)
# Milvus answers this for a collection a restarted server has not loaded again.
_RELEASED = re.compile(r"[Cc]ollection '([^']+)' is in state 'released'")
MAX_TOP_K = 1000
UPSERT_BATCH = 256


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One search result: the row id, a higher-is-better score and the requested fields."""

    id: str
    score: float
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class EncoderRecord:
    """The encoder a collection records against the one configured for it."""

    collection: str
    configured: str
    recorded: str  # "" when none is recorded (built before records: the next start records)
    conflict: bool  # it holds rows of another encoder: a start refuses, or re-embeds

    @property
    def state(self) -> str:
        if self.conflict:
            return "conflict"
        return "ok" if self.recorded == self.configured else "recorded at next start"


class VectorStore(Protocol):
    """Vector operations of one namespace; every backend passes tests/contracts/."""

    namespace: str

    # Collections whose recorded encoder differs from the configured one, when a changed
    # encoder is to be re-embedded rather than refused (collection -> the new encoder).
    encoder_changes: dict[str, str]

    def ensure_collections(self, specs: Sequence[CollectionSpec] = ()) -> None: ...

    def record_encoder(self, collection: str, encoder: str) -> None: ...

    def encoder_records(self) -> list[EncoderRecord]: ...

    def collections(self) -> list[str]: ...

    def upsert(self, collection: str, rows: Sequence[Mapping[str, Any]]) -> int: ...

    def flush(self, collections: Sequence[str] = ()) -> None: ...

    def search_dense(
        self,
        collection: str,
        vectors: Sequence[Sequence[float]],
        *,
        top_k: int,
        where: Filter | None = None,
        output_fields: Sequence[str] | None = None,
    ) -> list[list[VectorHit]]: ...

    def search_sparse(
        self,
        collection: str,
        texts: Sequence[str],
        *,
        top_k: int,
        where: Filter | None = None,
        output_fields: Sequence[str] | None = None,
    ) -> list[list[VectorHit]]: ...

    def query(
        self,
        collection: str,
        where: Filter,
        *,
        output_fields: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]: ...

    def document_counts(self, collection: str) -> dict[str, int]: ...

    def count(self, collection: str, where: Filter | None = None) -> int: ...

    def delete(self, collection: str, where: Filter) -> int: ...

    def delete_documents(self, document_ids: Sequence[str]) -> int: ...

    def delete_kb(self, kb_name: str) -> int: ...

    def health(self) -> str: ...


class MilvusVectorStore:
    """Milvus (Lite or server) behind the VectorStore port, bound to one Database."""

    def __init__(
        self,
        pool: MilvusClientPool,
        *,
        namespace: str,
        db_name: str,
        text_dim: int,
        visual_dim: int,
        index: IndexSettings | None = None,
        text_encoder: str = "",
        visual_encoder: str = "",
        reembed_on_encoder_change: bool = False,
    ) -> None:
        """``text_encoder``/``visual_encoder``: the models that write the base collections,
        recorded on them and checked on start ("" records and checks nothing). With
        ``reembed_on_encoder_change`` a changed encoder is noted in ``encoder_changes``
        instead of refused: the app re-embeds, then records it (``record_encoder``)."""
        self.namespace = namespace
        self._reembed = reembed_on_encoder_change
        self.encoder_changes: dict[str, str] = {}  # collection -> the encoder it now needs
        self.db_name = db_name
        self._pool = pool
        self._index = index or IndexSettings()
        self._specs: dict[str, CollectionSpec] = {
            TEXT_COLLECTION: CollectionSpec(
                TEXT_COLLECTION, "text", text_dim, encoder=text_encoder
            ),
            VISUAL_COLLECTION: CollectionSpec(
                VISUAL_COLLECTION, "visual", visual_dim, encoder=visual_encoder
            ),
        }

    @property
    def _client(self) -> MilvusClient:
        return self._pool.client(self.db_name)

    # --- collections ----------------------------------------------------------------------------

    def ensure_collections(self, specs: Sequence[CollectionSpec] = ()) -> None:
        """Create the base collections (and any extra specs) if missing, and load them."""
        for spec in specs:
            self._specs[spec.name] = spec
        client = self._client
        for spec in self._specs.values():
            self._guard(lambda s=spec: self._ensure(client, s), "ensure_collections")

    def _ensure(self, client: MilvusClient, spec: CollectionSpec) -> None:
        if not client.has_collection(spec.name):
            self._create(client, spec)
            client.load_collection(spec.name)
            return
        described = client.describe_collection(spec.name)
        self._check_owner(client, spec, described)
        self._check_dim(spec, described)
        client.load_collection(spec.name)
        self._check_encoder(spec, described)

    def _create(self, client: MilvusClient, spec: CollectionSpec) -> None:
        client.create_collection(
            spec.name,
            schema=build_schema(spec),
            consistency_level="Strong",  # read-your-writes: ingest then search at once
            properties={
                NAMESPACE_PROPERTY: self.namespace,
                **({ENCODER_PROPERTY: spec.encoder} if spec.encoder else {}),
            },
        )
        # A server builds indexes in the background, so pymilvus waits until each is built
        # before the load. Milvus Lite builds it inside the create call; pymilvus's wait would
        # only sleep 0.5 s per index and ask for a timestamp Lite does not serve (an ERROR
        # traceback from its gRPC server each time): ~5 s and 11 tracebacks per first start.
        index_params = build_index_params(client, spec, self._index)
        client.create_index(spec.name, index_params, sync=not self._pool.lite)

    def _check_owner(
        self, client: MilvusClient, spec: CollectionSpec, described: Mapping[str, Any]
    ) -> None:
        """A collection another namespace owns is refused: sharing its database (one
        ``milvus.db_name`` for two namespaces) would mix their searches and deletes. One built
        before owners were recorded takes the namespace that opens it first."""
        owner = str((described.get("properties") or {}).get(NAMESPACE_PROPERTY) or "")
        if owner == self.namespace:
            return
        if owner:
            raise VectorStoreError(
                f"collection {spec.name!r} in Milvus database {self.db_name!r} belongs to "
                f"namespace {owner!r}, not {self.namespace!r}; give each namespace its own "
                "database (leave milvus.db_name empty to derive it from the namespace)",
                collection=spec.name,
                namespace=self.namespace,
                owner=owner,
            )
        client.alter_collection_properties(
            spec.name, properties={NAMESPACE_PROPERTY: self.namespace}
        )

    def _check_dim(self, spec: CollectionSpec, described: Mapping[str, Any]) -> None:
        """An existing collection built for another encoder must not be written to blindly."""
        fields = described.get("fields", [])
        stored: dict[str, Any] = next((f for f in fields if f.get("name") == DENSE_FIELD), {})
        dim = (stored.get("params") or {}).get("dim")
        if dim is not None and int(dim) != spec.dim:
            raise VectorStoreError(
                f"collection {spec.name!r} in Milvus database {self.db_name!r} stores "
                f"{int(dim)}-d vectors but its encoder makes {spec.dim}-d vectors; use the "
                "encoder it was built with, or re-create the collection (re-ingest)",
                collection=spec.name,
                namespace=self.namespace,
                stored_dim=int(dim),
                expected_dim=spec.dim,
            )

    def _check_encoder(self, spec: CollectionSpec, described: Mapping[str, Any]) -> None:
        """Vectors of another encoder with the same dimension are refused too: its queries
        would search a space they were not made in, and rank by noise without any error.

        An empty collection takes the configured encoder (nothing was written in the old
        one); so does one without a record (built before encoders were recorded: the first
        start after the upgrade records the encoder it is configured with). With
        ``reembed_on_encoder_change`` the change is noted for the app to re-embed."""
        if not spec.encoder:
            return
        record = self._encoder_record(spec, described)
        stored = record.recorded
        if stored == spec.encoder:
            return
        if record.conflict:
            if not self._reembed:
                raise VectorStoreError(
                    f"collection {spec.name!r} in Milvus database {self.db_name!r} holds "
                    f"vectors of the encoder {stored!r} but is configured with "
                    f"{spec.encoder!r} (same dimension, another embedding space); configure "
                    "the encoder it was built with, or set milvus.reembed_on_encoder_change "
                    "to run every knowledge base through the new one",
                    collection=spec.name,
                    namespace=self.namespace,
                    stored_encoder=stored,
                    expected_encoder=spec.encoder,
                )
            # Recorded only once the re-embedding is queued: a crash before then finds the
            # old record again and queues it again.
            self.encoder_changes[spec.name] = spec.encoder
            return
        self.record_encoder(spec.name, spec.encoder)
        logger.info(
            "collection %s records its encoder: %s (before: %s)",
            spec.name,
            spec.encoder,
            stored or "none recorded",
        )

    def _encoder_record(self, spec: CollectionSpec, described: Mapping[str, Any]) -> EncoderRecord:
        stored = str((described.get("properties") or {}).get(ENCODER_PROPERTY) or "")
        # Rows are counted only when the records differ: an empty collection has no conflict.
        conflict = bool(stored) and stored != spec.encoder and self.count(spec.name) > 0
        return EncoderRecord(spec.name, spec.encoder, stored, conflict)

    def encoder_records(self) -> list[EncoderRecord]:
        """Each existing collection's encoder record against the configured encoder, by the
        rules of the start-up check (for ``doctor``; reads only)."""

        def read() -> list[EncoderRecord]:
            client = self._client
            return [
                self._encoder_record(spec, client.describe_collection(spec.name))
                for spec in self._specs.values()
                if spec.encoder and client.has_collection(spec.name)
            ]

        return list(self._guard(read, "encoder_records"))

    def record_encoder(self, collection: str, encoder: str) -> None:
        """Record ``encoder`` as the one whose vectors ``collection`` holds."""
        properties = {ENCODER_PROPERTY: encoder}
        self._guard(
            lambda: self._client.alter_collection_properties(collection, properties=properties),
            "record_encoder",
        )
        self.encoder_changes.pop(collection, None)

    def collections(self) -> list[str]:
        return sorted(self._guard(self._client.list_collections, "list_collections"))

    def spec(self, collection: str) -> CollectionSpec:
        try:
            return self._specs[collection]
        except KeyError:
            raise InvalidInputError(
                f"unknown collection {collection!r}", collection=collection
            ) from None

    # --- writes ---------------------------------------------------------------------------------

    def upsert(self, collection: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert or replace rows by id; the BM25 input is derived from the row's text here."""
        spec = self.spec(collection)
        prepared = [self._prepare(spec, row) for row in rows]
        written = 0
        for start in range(0, len(prepared), UPSERT_BATCH):
            batch = prepared[start : start + UPSERT_BATCH]
            result = self._guard(lambda b=batch: self._client.upsert(collection, b), "upsert")
            written += int(result.get("upsert_count", len(batch)))
        return written

    def flush(self, collections: Sequence[str] = ()) -> None:
        """Seal what was written so searches use the index.

        Milvus searches unsealed (growing) segments by brute force: measured on Lite at 10k rows,
        ~400 ms per search before a flush and ~25 ms after. A flush costs about a second, so
        writers flush once per document or batch, not per upsert call.
        """
        for name in collections or self._existing():
            self.spec(name)
            self._guard(lambda n=name: self._client.flush(n), "flush")

    def _prepare(self, spec: CollectionSpec, row: Mapping[str, Any]) -> dict[str, Any]:
        vector = row.get(DENSE_FIELD)
        if vector is None or len(vector) != spec.dim:
            got = None if vector is None else len(vector)
            raise InvalidInputError(
                f"{spec.name} expects {spec.dim}-d vectors, got {got}",
                collection=spec.name,
                row_id=row.get("id"),
            )
        derived = (SPARSE_FIELD, SPARSE_TEXT_FIELD, BM25_TEXT_KEY)
        prepared = {k: v for k, v in row.items() if k not in derived}
        prepared[DENSE_FIELD] = [float(x) for x in vector]
        prepared.setdefault("metadata", {})
        body = row.get("text") if spec.kind == "text" else row.get("content_summary")
        body = row.get(BM25_TEXT_KEY) or body
        prepared[SPARSE_TEXT_FIELD] = encode_for_bm25(str(body or ""))
        return prepared

    def delete(self, collection: str, where: Filter) -> int:
        if not where.expression:
            raise InvalidInputError("refusing to delete with an empty filter")
        self.spec(collection)
        result = self._guard(
            lambda: self._client.delete(collection, filter=where.expression), "delete"
        )
        return int(result.get("delete_count", 0)) if isinstance(result, dict) else 0

    def delete_documents(self, document_ids: Sequence[str]) -> int:
        """Remove every row of these documents from every collection of the namespace."""
        if not document_ids:
            return 0
        where = in_("document_id", list(document_ids))
        return sum(self.delete(name, where) for name in self._existing())

    def delete_kb(self, kb_name: str) -> int:
        return sum(self.delete(name, eq("kb_name", kb_name)) for name in self._existing())

    def _existing(self) -> list[str]:
        present = set(self.collections())
        return [name for name in self._specs if name in present]

    # --- reads ----------------------------------------------------------------------------------

    def search_dense(
        self,
        collection: str,
        vectors: Sequence[Sequence[float]],
        *,
        top_k: int,
        where: Filter | None = None,
        output_fields: Sequence[str] | None = None,
    ) -> list[list[VectorHit]]:
        spec = self.spec(collection)
        _check_top_k(top_k)
        results = self._guard(
            lambda: self._client.search(
                collection,
                data=[list(map(float, v)) for v in vectors],
                anns_field=DENSE_FIELD,
                limit=top_k,
                filter=where.expression if where else "",
                output_fields=list(output_fields or self._fields(spec)),
                search_params={"params": self._index.search_params(top_k)},
            ),
            "search",
        )
        return [_ranked(_admitted((_hit(h) for h in hits), where)) for hits in results]

    def search_sparse(
        self,
        collection: str,
        texts: Sequence[str],
        *,
        top_k: int,
        where: Filter | None = None,
        output_fields: Sequence[str] | None = None,
    ) -> list[list[VectorHit]]:
        spec = self.spec(collection)
        _check_top_k(top_k)
        encoded = [encode_for_bm25(t, query=True) for t in texts]
        output: list[list[VectorHit]] = [[] for _ in texts]
        # A query with no token (punctuation only) matches nothing; Milvus would reject it.
        live = [i for i, text in enumerate(encoded) if text]
        if not live:
            return output
        results = self._guard(
            lambda: self._client.search(
                collection,
                data=[encoded[i] for i in live],
                anns_field=SPARSE_FIELD,
                limit=top_k,
                filter=where.expression if where else "",
                output_fields=list(output_fields or self._fields(spec)),
            ),
            "search",
        )
        for index, hits in zip(live, results, strict=True):
            # BM25 is non-negative by definition; Lite reports it negated, a server does not.
            output[index] = _ranked(_admitted((_hit(h, absolute=True) for h in hits), where))
        return output

    def query(
        self,
        collection: str,
        where: Filter,
        *,
        output_fields: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        spec = self.spec(collection)
        if not 1 <= limit <= 16384:
            raise InvalidInputError("query limit must be between 1 and 16384")
        rows = self._guard(
            lambda: self._client.query(
                collection,
                filter=where.expression,
                output_fields=list(output_fields or self._fields(spec)),
                limit=limit,
            ),
            "query",
        )
        return [dict(row) for row in rows if where.admits(row)]

    def document_counts(self, collection: str, *, batch: int = 4096) -> dict[str, int]:
        """Rows per ``document_id`` in any collection of the namespace (a plugin's included),
        read with a query iterator: consistency checks must see every row, not one page."""

        def scan() -> dict[str, int]:
            counts: dict[str, int] = {}
            iterator = self._client.query_iterator(
                collection, batch_size=batch, filter="", output_fields=["document_id"]
            )
            try:
                while rows := iterator.next():
                    for row in rows:
                        key = str(row.get("document_id") or "")
                        counts[key] = counts.get(key, 0) + 1
            finally:
                iterator.close()
            return counts

        counts: dict[str, int] = self._guard(scan, "query_iterator")
        return counts

    def count(self, collection: str, where: Filter | None = None) -> int:
        self.spec(collection)
        rows = self._guard(
            lambda: self._client.query(
                collection, filter=where.expression if where else "", output_fields=["count(*)"]
            ),
            "count",
        )
        return int(rows[0]["count(*)"]) if rows else 0

    def health(self) -> str:
        version = self._guard(self._pool.server_version, "health")
        kind = "milvus-lite" if self._pool.lite else "milvus"
        return f"{kind} {version}, database {self.db_name}"

    # --- internals ------------------------------------------------------------------------------

    @staticmethod
    def _fields(spec: CollectionSpec) -> tuple[str, ...]:
        base = text_fields() if spec.kind == "text" else visual_fields()
        return base + spec.extra_varchar_fields

    def _guard(self, call: Any, operation: str) -> Any:
        try:
            return call()
        except (BackendUnavailableError, InvalidInputError, VectorStoreError):
            raise
        except Exception as exc:
            released = _RELEASED.search(str(exc))
            if released:  # a restarted Milvus forgets what was loaded: load it, try once more
                return self._reload_and_retry(released.group(1), call, operation, exc)
            raise self._translated(exc, operation) from exc

    def _reload_and_retry(
        self, collection: str, call: Any, operation: str, first: Exception
    ) -> Any:
        try:
            self._client.load_collection(collection)
            return call()
        except Exception as exc:
            raise self._translated(exc, operation) from first

    def _translated(self, exc: Exception, operation: str) -> EagleError:
        error = BackendUnavailableError if _is_unavailable(exc) else VectorStoreError
        return error(
            f"Milvus {operation} failed: {exc}",
            backend="milvus",
            namespace=self.namespace,
            operation=operation,
        )


def _is_unavailable(exc: Exception) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(m in text for m in ("unavailable", "connect", "timeout", "deadline", "closed"))


def _check_top_k(top_k: int) -> None:
    if not 1 <= top_k <= MAX_TOP_K:
        raise InvalidInputError(f"top_k must be between 1 and {MAX_TOP_K}", top_k=top_k)


def _ranked(hits: Iterable[VectorHit]) -> list[VectorHit]:
    """Best first, equal scores by id: Milvus Lite and a server return tied hits (the same
    passage in two documents) in different orders, and a store's results must not depend on
    which of the two holds them (``migrate-store`` compares them query by query)."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.id))


def _admitted(hits: Iterable[VectorHit], where: Filter | None) -> Iterable[VectorHit]:
    """The hits whose fields have the types the filter asks for (Filter.typed)."""
    return hits if where is None else (hit for hit in hits if where.admits(hit.fields))


def _hit(raw: Mapping[str, Any], *, absolute: bool = False) -> VectorHit:
    score = float(raw.get("distance", 0.0))
    if absolute:
        score = abs(score)
    if not math.isfinite(score):
        score = 0.0
    return VectorHit(str(raw.get("id")), score, dict(raw.get("entity", {})))
