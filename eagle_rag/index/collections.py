"""Collection schemas: the base ``eagle_text`` and ``eagle_visual``, and specs plugins reuse.

Both base collections carry a dense vector and a BM25 sparse vector (fed by Milvus's BM25
function from ``sparse_text``, see :mod:`eagle_rag.index.sparse`), plus the scalar fields every
query filters on, with inverted indexes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pymilvus import DataType, Function, FunctionType, MilvusClient

TEXT_COLLECTION = "eagle_text"
VISUAL_COLLECTION = "eagle_visual"
BASE_COLLECTIONS = (TEXT_COLLECTION, VISUAL_COLLECTION)

DENSE_FIELD = "dense"
SPARSE_FIELD = "sparse"
SPARSE_TEXT_FIELD = "sparse_text"
# A row may carry the text its BM25 vector is built from when that differs from the text it
# shows (a plugin's own view of a chunk, e.g. with concept tokens); it is not stored itself.
BM25_TEXT_KEY = "bm25_text"
# The collection property naming the encoder its vectors come from: another encoder of the
# same dimension would pass the dimension check and search a space it did not write.
ENCODER_PROPERTY = "eagle_rag.encoder"
# The collection property naming the namespace that owns it: two instances of different
# namespaces given one database (milvus.db_name) would search and delete each other's rows.
NAMESPACE_PROPERTY = "eagle_rag.namespace"
MAX_TEXT = 65535
MAX_PAGES = 256

Kind = Literal["text", "visual"]


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """How the dense field is indexed and searched."""

    index_type: str = "HNSW"
    metric: str = "COSINE"
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    search_ef: int = 128

    def build_params(self) -> dict[str, Any]:
        if self.index_type == "HNSW":
            return {"M": self.hnsw_m, "efConstruction": self.hnsw_ef_construction}
        if self.index_type == "IVF_FLAT":
            return {"nlist": 1024}
        return {}

    def search_params(self, top_k: int) -> dict[str, Any]:
        if self.index_type == "HNSW":
            return {"ef": max(self.search_ef, top_k)}
        if self.index_type == "IVF_FLAT":
            return {"nprobe": 64}
        return {}


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """A collection to create: its name, kind (text or visual), vector dimension, extra fields,
    and the encoder that writes its vectors ("" when the writer is not known: not checked)."""

    name: str
    kind: Kind
    dim: int
    extra_varchar_fields: tuple[str, ...] = field(default=())
    encoder: str = ""

    @property
    def scalar_index_fields(self) -> tuple[str, ...]:
        if self.kind == "text":
            return ("document_id", "kb_name", "type")
        return ("document_id", "kb_name", "chunk_type", "image_id")


def build_schema(spec: CollectionSpec) -> Any:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=128)
    schema.add_field("document_id", DataType.VARCHAR, max_length=64)
    schema.add_field("kb_name", DataType.VARCHAR, max_length=64)
    if spec.kind == "text":
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT)
        schema.add_field("path", DataType.VARCHAR, max_length=2048)
        schema.add_field("level", DataType.INT64)
        schema.add_field("type", DataType.VARCHAR, max_length=32)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field(
            "page_nums", DataType.ARRAY, element_type=DataType.INT64, max_capacity=MAX_PAGES
        )
    else:
        schema.add_field("image_id", DataType.VARCHAR, max_length=128)
        schema.add_field("page", DataType.INT64)
        schema.add_field("position", DataType.VARCHAR, max_length=128)
        schema.add_field("chunk_type", DataType.VARCHAR, max_length=32)
        schema.add_field("parent_section", DataType.VARCHAR, max_length=2048)
        schema.add_field("content_summary", DataType.VARCHAR, max_length=MAX_TEXT)
        schema.add_field("source_chunk_id", DataType.VARCHAR, max_length=128)
    for name in spec.extra_varchar_fields:
        schema.add_field(name, DataType.VARCHAR, max_length=1024)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field(
        SPARSE_TEXT_FIELD,
        DataType.VARCHAR,
        max_length=MAX_TEXT,
        enable_analyzer=True,
        analyzer_params={"type": "standard"},
    )
    schema.add_field(DENSE_FIELD, DataType.FLOAT_VECTOR, dim=spec.dim)
    schema.add_field(SPARSE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name=f"{spec.name}_bm25",
            function_type=FunctionType.BM25,
            input_field_names=[SPARSE_TEXT_FIELD],
            output_field_names=[SPARSE_FIELD],
        )
    )
    return schema


def build_index_params(client: MilvusClient, spec: CollectionSpec, index: IndexSettings) -> Any:
    params = client.prepare_index_params()
    params.add_index(
        DENSE_FIELD,
        index_type=index.index_type,
        metric_type=index.metric,
        params=index.build_params(),
    )
    params.add_index(SPARSE_FIELD, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    for name in spec.scalar_index_fields:
        params.add_index(name, index_type="INVERTED")
    return params


def text_fields() -> tuple[str, ...]:
    """Fields a text search returns by default (no vectors)."""
    return (
        "id",
        "document_id",
        "kb_name",
        "text",
        "path",
        "level",
        "type",
        "chunk_index",
        "page_nums",
        "metadata",
    )


def visual_fields() -> tuple[str, ...]:
    return (
        "id",
        "document_id",
        "kb_name",
        "image_id",
        "page",
        "position",
        "chunk_type",
        "parent_section",
        "content_summary",
        "source_chunk_id",
        "metadata",
    )
