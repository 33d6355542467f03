"""The vector store port on Milvus Lite (a temp data dir) and on a Milvus server reached by URI."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle_rag.errors import BackendUnavailableError, InvalidInputError, VectorStoreError
from eagle_rag.index import filters as f
from eagle_rag.index.collections import (
    ENCODER_PROPERTY,
    NAMESPACE_PROPERTY,
    TEXT_COLLECTION,
    VISUAL_COLLECTION,
    IndexSettings,
)
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore
from tests.servers import free_port

DIM = 16


@pytest.fixture(scope="module")
def lite_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusClientPool]:
    pool = MilvusClientPool(str(tmp_path_factory.mktemp("lite") / "milvus.db"))
    yield pool
    pool.close()


@pytest.fixture(
    scope="module", params=["lite", pytest.param("server", marks=pytest.mark.integration)]
)
def pool(request: pytest.FixtureRequest) -> Iterator[MilvusClientPool]:
    if request.param == "lite":
        yield request.getfixturevalue("lite_pool")
        return
    # Closed at teardown: idle pooled channels keep pinging, and the Lite gRPC server answers
    # too many pings with GOAWAY, which would break later clients sharing the channel.
    server = MilvusClientPool(request.getfixturevalue("milvus_uri"))
    yield server
    server.close()


def _store(pool: MilvusClientPool, namespace: str | None = None) -> MilvusVectorStore:
    namespace = namespace or f"ns_{uuid.uuid4().hex[:10]}"
    store = MilvusVectorStore(
        pool,
        namespace=namespace,
        db_name=namespace.replace("-", "_"),
        text_dim=DIM,
        visual_dim=DIM,
        index=IndexSettings(index_type="HNSW"),
    )
    store.ensure_collections()
    return store


# Creating a collection costs ~3 s on Milvus, so each backend gets one store per module (and a
# second namespace for isolation tests); every test works in its own KB and documents.
@pytest.fixture(scope="module")
def store(pool: MilvusClientPool) -> MilvusVectorStore:
    return _store(pool)


@pytest.fixture(scope="module")
def other_store(pool: MilvusClientPool) -> MilvusVectorStore:
    return _store(pool)


@pytest.fixture
def kb() -> str:
    return f"kb-{uuid.uuid4().hex[:8]}"


def _in(kb: str) -> f.Filter:
    return f.eq("kb_name", kb)


def _vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


def _text_row(i: int, text: str, kb: str, doc: str = "d1", **extra: object) -> dict:
    row = {
        "id": f"{kb}:{doc}:{i}",
        "document_id": doc,
        "kb_name": kb,
        "text": text,
        "path": f"doc/Section {i}",
        "level": 2,
        "type": "text",
        "chunk_index": i,
        "page_nums": [i + 1],
        "metadata": {"year": 2020 + i, "source": "report"},
        "dense": _vec(i),
    }
    row.update(extra)
    return row


def _visual_row(i: int, kb: str, doc: str = "d1") -> dict:
    return {
        "id": f"{kb}:{doc}:v{i}",
        "document_id": doc,
        "kb_name": kb,
        "image_id": f"img{i}",
        "page": i + 1,
        "position": "full",
        "chunk_type": "table",
        "parent_section": "doc/Results",
        "content_summary": "revenue table by quarter",
        "source_chunk_id": f"{kb}:{doc}:{i}",
        "metadata": {},
        "dense": _vec(100 + i),
    }


TEXTS = [
    "Eagle-RAG retrieves cited evidence for agents.",
    "Reciprocal rank fusion merges ranked lists without comparing raw scores.",
    "北京大学是中国著名的高等学府，位于北京。",
    "上海的天气今天很好，适合出去散步。",
    "Milvus stores dense and sparse vectors for hybrid search.",
]


def _fill(store: MilvusVectorStore, kb: str, doc: str = "d1") -> None:
    store.upsert(TEXT_COLLECTION, [_text_row(i, t, kb=kb, doc=doc) for i, t in enumerate(TEXTS)])


def test_ensure_collections_is_idempotent(store: MilvusVectorStore, kb: str) -> None:
    store.ensure_collections()
    assert {TEXT_COLLECTION, VISUAL_COLLECTION} <= set(store.collections())
    assert store.count(TEXT_COLLECTION, _in(kb)) == 0


def test_upsert_replaces_rows_with_the_same_id(store: MilvusVectorStore, kb: str) -> None:
    _fill(store, kb)
    assert store.count(TEXT_COLLECTION, _in(kb)) == len(TEXTS)
    store.upsert(TEXT_COLLECTION, [_text_row(0, "replaced text about kiwis", kb)])
    assert store.count(TEXT_COLLECTION, _in(kb)) == len(TEXTS)
    [row] = store.query(TEXT_COLLECTION, f.eq("id", f"{kb}:d1:0"))
    assert row["text"] == "replaced text about kiwis"
    [[hit]] = store.search_sparse(TEXT_COLLECTION, ["kiwis"], top_k=1, where=_in(kb))
    assert hit.id == f"{kb}:d1:0"  # the BM25 side was replaced too


def test_a_rows_bm25_text_feeds_bm25_and_is_not_stored(store: MilvusVectorStore, kb: str) -> None:
    """``bm25_text`` (a plugin's view of a chunk) is what BM25 indexes; ``text`` is shown."""
    row = _text_row(0, "shown words about pears", kb, bm25_text="indexed words about plums")
    store.upsert(TEXT_COLLECTION, [row, _text_row(1, "plain text about apples", kb)])
    [plums] = store.search_sparse(TEXT_COLLECTION, ["plums"], top_k=2, where=_in(kb))
    [pears] = store.search_sparse(TEXT_COLLECTION, ["pears"], top_k=2, where=_in(kb))
    assert [h.id for h in plums] == [f"{kb}:d1:0"] and pears == []
    [stored] = store.query(TEXT_COLLECTION, f.eq("id", f"{kb}:d1:0"))
    assert stored["text"] == "shown words about pears" and "bm25_text" not in stored


def test_wrong_dimension_is_refused_before_writing(store: MilvusVectorStore, kb: str) -> None:
    bad = _text_row(0, "x", kb)
    bad["dense"] = [0.1] * (DIM + 1)
    with pytest.raises(InvalidInputError, match=f"expects {DIM}-d"):
        store.upsert(TEXT_COLLECTION, [_text_row(1, "fine", kb), bad])
    assert store.count(TEXT_COLLECTION, _in(kb)) == 0


def test_dense_search_finds_the_nearest_and_respects_filters(
    store: MilvusVectorStore, kb: str
) -> None:
    _fill(store, kb)
    _fill(store, kb + "-x")
    [hits] = store.search_dense(TEXT_COLLECTION, [_vec(3)], top_k=3, where=_in(kb))
    assert hits[0].id == f"{kb}:d1:3" and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert all(h.fields["kb_name"] == kb for h in hits)
    assert hits[0].fields["page_nums"] == [4] and hits[0].fields["path"] == "doc/Section 3"


def test_flush_keeps_every_row_searchable(store: MilvusVectorStore, kb: str) -> None:
    _fill(store, kb)
    store.flush([TEXT_COLLECTION])
    store.flush()
    assert store.count(TEXT_COLLECTION, _in(kb)) == len(TEXTS)
    [hits] = store.search_dense(TEXT_COLLECTION, [_vec(2)], top_k=1, where=_in(kb))
    assert hits[0].id == f"{kb}:d1:2"


def test_batched_dense_queries(store: MilvusVectorStore, kb: str) -> None:
    _fill(store, kb)
    results = store.search_dense(TEXT_COLLECTION, [_vec(0), _vec(4)], top_k=1, where=_in(kb))
    assert [r[0].id for r in results] == [f"{kb}:d1:0", f"{kb}:d1:4"]


def test_tied_hits_come_back_in_id_order(store: MilvusVectorStore, kb: str) -> None:
    """The same passage in several documents scores the same: Lite and a server must list such
    ties alike (by id), dense and BM25, whatever order they were written in."""
    text = "Identical passages tie on every retriever."
    docs = ["d7", "d2", "d9", "d4"]
    rows = [_text_row(0, text, kb=kb, doc=doc, dense=_vec(42)) for doc in docs]
    store.upsert(TEXT_COLLECTION, rows)
    [dense] = store.search_dense(TEXT_COLLECTION, [_vec(42)], top_k=4, where=_in(kb))
    [sparse] = store.search_sparse(
        TEXT_COLLECTION, ["identical passages tie"], top_k=4, where=_in(kb)
    )
    expected = sorted(f"{kb}:{doc}:0" for doc in docs)
    assert [h.id for h in dense] == expected
    assert [h.id for h in sparse] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("reciprocal rank fusion", 1),
        ("北京大学", 2),
        ("上海天气", 3),
        ("HYBRID search Milvus", 4),
    ],
)
def test_bm25_finds_english_and_chinese(
    store: MilvusVectorStore, kb: str, query: str, expected: int
) -> None:
    _fill(store, kb)
    [hits] = store.search_sparse(TEXT_COLLECTION, [query], top_k=3, where=_in(kb))
    assert hits[0].id == f"{kb}:d1:{expected}"
    assert hits[0].score > 0
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_sparse_query_without_tokens_matches_nothing(store: MilvusVectorStore, kb: str) -> None:
    _fill(store, kb)
    empty, found = store.search_sparse(TEXT_COLLECTION, ["?!", "北京"], top_k=2, where=_in(kb))
    assert empty == [] and found[0].id == f"{kb}:d1:2"


def test_bm25_queries_skip_function_words_unless_nothing_else_is_left(
    store: MilvusVectorStore, kb: str
) -> None:
    _fill(store, kb)
    [question] = store.search_sparse(
        TEXT_COLLECTION, ["what are the lists for"], top_k=5, where=_in(kb)
    )
    assert [h.id for h in question] == [f"{kb}:d1:1"]  # "for" alone would also find d1:0
    [only_function_words] = store.search_sparse(TEXT_COLLECTION, ["for"], top_k=5, where=_in(kb))
    # "evidence for agents", "vectors for hybrid search"
    assert {h.id for h in only_function_words} == {f"{kb}:d1:0", f"{kb}:d1:4"}


def test_scalar_json_and_array_filters(store: MilvusVectorStore, kb: str) -> None:
    _fill(store, kb)

    def ids(where: f.Filter) -> list[str]:
        rows = store.query(TEXT_COLLECTION, _in(kb) & where)
        return sorted(r["id"].rsplit(":", 1)[1] for r in rows)

    assert ids(f.json_between("metadata", "year", ge=2022, le=2023)) == ["2", "3"]
    assert ids(f.array_contains("page_nums", 5)) == ["4"]
    assert ids(f.json_in("metadata", "year", [2020, 2024])) == ["0", "4"]
    assert ids(f.in_("chunk_index", [0, 1]) & f.eq("type", "text")) == ["0", "1"]
    assert ids(f.not_(f.json_eq("metadata", "source", "report"))) == []


def test_a_boolean_matches_only_booleans_and_a_number_only_numbers(
    store: MilvusVectorStore, kb: str
) -> None:
    """Milvus compares JSON loosely: {"priority": true} matched the number 1, 0 matched false."""
    flags: list[object] = [True, 1, 1.0, False, 0]
    rows = [_text_row(i, TEXTS[i], kb, metadata={"flag": v}) for i, v in enumerate(flags)]
    store.upsert(TEXT_COLLECTION, rows)

    def ids(where: f.Filter) -> list[str]:
        found = store.query(TEXT_COLLECTION, _in(kb) & where)
        return sorted(r["id"].rsplit(":", 1)[1] for r in found)

    assert ids(f.json_eq("metadata", "flag", True)) == ["0"]
    assert ids(f.json_eq("metadata", "flag", 1)) == ["1", "2"]
    assert ids(f.json_eq("metadata", "flag", False)) == ["3"]
    assert ids(f.json_in("metadata", "flag", [0, True])) == ["0", "4"]
    [dense] = store.search_dense(
        TEXT_COLLECTION, [_vec(0)], top_k=5, where=_in(kb) & f.json_eq("metadata", "flag", 1)
    )
    assert sorted(h.id for h in dense) == [f"{kb}:d1:1", f"{kb}:d1:2"]
    for flag, found in ((0, [f"{kb}:d1:4"]), (False, [])):  # row 4 says "Milvus"; its flag is 0
        where = _in(kb) & f.json_eq("metadata", "flag", flag)
        [sparse] = store.search_sparse(TEXT_COLLECTION, ["Milvus"], top_k=5, where=where)
        assert [h.id for h in sparse] == found, flag


HOSTILE = [
    '" or 1==1 or "',
    'a"b',
    "back\\slash\\",
    "line\nbreak\r\t",
    "中文'值",
    "x" * 2000,
    "${x}",
]


def test_hostile_values_match_exactly_and_inject_nothing(store: MilvusVectorStore, kb: str) -> None:
    store.upsert(
        TEXT_COLLECTION,
        [_text_row(i, "t", kb, metadata={"source": v}) for i, v in enumerate(HOSTILE)],
    )
    for i, value in enumerate(HOSTILE):
        rows = store.query(TEXT_COLLECTION, f.json_eq("metadata", "source", value))
        assert [r["id"] for r in rows] == [f"{kb}:d1:{i}"]
        assert store.count(TEXT_COLLECTION, f.eq("document_id", value)) == 0
        assert store.delete(TEXT_COLLECTION, f.eq("kb_name", value)) == 0
    assert store.count(TEXT_COLLECTION, _in(kb)) == len(HOSTILE)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(min_size=1, max_size=40))
def test_any_string_filters_exactly(lite_pool: MilvusClientPool, value: str) -> None:
    store = _store(lite_pool, "ns_prop")
    store.upsert(TEXT_COLLECTION, [_text_row(0, "t", "prop", metadata={"v": value})])
    rows = store.query(TEXT_COLLECTION, f.json_eq("metadata", "v", value))
    assert [r["id"] for r in rows] == ["prop:d1:0"]
    store.delete(TEXT_COLLECTION, f.eq("kb_name", "prop"))


def test_delete_documents_and_kb_reach_every_collection(store: MilvusVectorStore, kb: str) -> None:
    other = kb + "-o"
    _fill(store, kb, doc="d1")
    _fill(store, other, doc="d2")
    store.upsert(VISUAL_COLLECTION, [_visual_row(0, kb, "d1"), _visual_row(1, other, "d2")])
    both = _in(kb) | _in(other)
    store.delete_documents(["d1"])
    assert store.count(TEXT_COLLECTION, both & f.eq("document_id", "d1")) == 0
    assert store.count(VISUAL_COLLECTION, both & f.eq("document_id", "d1")) == 0
    assert store.search_sparse(TEXT_COLLECTION, ["北京大学"], top_k=5, where=_in(kb)) == [[]]
    assert store.count(TEXT_COLLECTION, _in(other)) == len(TEXTS)
    store.delete_kb(other)
    assert store.count(TEXT_COLLECTION, both) == 0 and store.count(VISUAL_COLLECTION, both) == 0


def test_visual_rows_keep_their_anchors(store: MilvusVectorStore, kb: str) -> None:
    store.upsert(VISUAL_COLLECTION, [_visual_row(0, kb)])
    [[hit]] = store.search_sparse(VISUAL_COLLECTION, ["revenue table"], top_k=1, where=_in(kb))
    assert hit.fields["chunk_type"] == "table"
    assert hit.fields["parent_section"] == "doc/Results"
    assert hit.fields["source_chunk_id"] == f"{kb}:d1:0"


def test_same_kb_in_two_namespaces_never_collides(
    store: MilvusVectorStore, other_store: MilvusVectorStore, kb: str
) -> None:
    _fill(store, kb)
    _fill(other_store, kb)
    other_store.delete_kb(kb)
    assert store.count(TEXT_COLLECTION, _in(kb)) == len(TEXTS)
    assert other_store.search_sparse(TEXT_COLLECTION, ["北京大学"], top_k=3, where=_in(kb)) == [[]]
    store.delete_kb(kb)


@pytest.mark.parametrize("top_k", [0, -1, 1001])
def test_top_k_is_bounded(store: MilvusVectorStore, top_k: int) -> None:
    with pytest.raises(InvalidInputError):
        store.search_dense(TEXT_COLLECTION, [_vec(0)], top_k=top_k)


def test_unknown_collection_and_empty_delete_filter_are_refused(store: MilvusVectorStore) -> None:
    with pytest.raises(InvalidInputError, match="unknown collection"):
        store.count("eagle_nope")
    with pytest.raises(InvalidInputError, match="empty filter"):
        store.delete(TEXT_COLLECTION, f.all_of())


def test_health_names_the_database(store: MilvusVectorStore) -> None:
    assert store.db_name in store.health()


@pytest.mark.integration
def test_unreachable_server_is_a_backend_error() -> None:
    dead = MilvusClientPool(f"http://127.0.0.1:{free_port()}", timeout=2)
    store = MilvusVectorStore(
        dead, namespace="core", db_name="default", text_dim=DIM, visual_dim=DIM
    )
    with pytest.raises(BackendUnavailableError, match="Milvus"):
        store.ensure_collections()


def test_lite_data_dir_is_created(tmp_path: Path) -> None:
    pool = MilvusClientPool(str(tmp_path / "deep" / "er" / "milvus.db"))
    try:
        assert pool.client("ns_mkdir").list_collections() == []
        assert (tmp_path / "deep" / "er").is_dir()
    finally:
        pool.close()


def test_a_database_owned_by_another_namespace_is_refused(pool: MilvusClientPool) -> None:
    """Two namespaces given one database (a shared milvus.db_name) would search and delete each
    other's rows: the second is refused. A collection without an owner takes the first."""
    first = _store(pool)

    def opened(namespace: str) -> MilvusVectorStore:
        store = MilvusVectorStore(
            pool, namespace=namespace, db_name=first.db_name, text_dim=DIM, visual_dim=DIM
        )
        store.ensure_collections()
        return store

    with pytest.raises(VectorStoreError, match=f"belongs to namespace '{first.namespace}'"):
        opened(f"{first.namespace}-other")
    opened(first.namespace)  # its owner opens it again
    client = pool.client(first.db_name)
    for name in (TEXT_COLLECTION, VISUAL_COLLECTION):  # as built before owners were recorded
        client.drop_collection_properties(name, property_keys=[NAMESPACE_PROPERTY])
    opened("adopter")
    with pytest.raises(VectorStoreError, match="belongs to namespace 'adopter'"):
        opened(first.namespace)


def test_existing_collection_of_another_dimension_is_refused(pool: MilvusClientPool) -> None:
    first = _store(pool)
    changed = MilvusVectorStore(
        pool, namespace=first.namespace, db_name=first.db_name, text_dim=DIM * 2, visual_dim=DIM
    )
    with pytest.raises(VectorStoreError, match=rf"stores {DIM}-d vectors but .* {DIM * 2}-d"):
        changed.ensure_collections()


def test_existing_collection_of_another_encoder_is_refused(pool: MilvusClientPool) -> None:
    """Same dimension, another embedding space: refused once the collection holds rows. An
    empty collection, and one built before encoders were recorded, take the configured one."""
    namespace = f"ns_{uuid.uuid4().hex[:10]}"

    def opened(encoder: str, reembed: bool = False) -> MilvusVectorStore:
        store = MilvusVectorStore(
            pool,
            namespace=namespace,
            db_name=namespace,
            text_dim=DIM,
            visual_dim=DIM,
            text_encoder=encoder,
            visual_encoder="visual-a",
            reembed_on_encoder_change=reembed,
        )
        store.ensure_collections()
        return store

    def recorded() -> str | None:
        described = pool.client(namespace).describe_collection(TEXT_COLLECTION)
        return (described.get("properties") or {}).get(ENCODER_PROPERTY)

    opened("")  # as a store built before encoders were recorded: no record
    assert recorded() is None
    opened("model-a")
    assert recorded() == "model-a"
    store = opened("model-b")  # still empty: nothing is lost, the new encoder is recorded
    assert recorded() == "model-b"
    store.upsert(TEXT_COLLECTION, [_text_row(0, "pump", "kb-enc")])
    store.flush()
    with pytest.raises(
        VectorStoreError, match="encoder 'model-b' but is configured with 'model-a'"
    ):
        opened("model-a")
    assert recorded() == "model-b"
    assert opened("model-b").count(TEXT_COLLECTION) == 1
    opened("")  # no encoder given (a migration's target): nothing checked, nothing changed
    assert recorded() == "model-b"
    # Re-embedding instead: the change is noted, and recorded only when the app says so.
    changing = opened("model-a", reembed=True)
    assert changing.encoder_changes == {TEXT_COLLECTION: "model-a"}
    assert recorded() == "model-b"
    records = {r.collection: r for r in changing.encoder_records()}  # what doctor shows
    assert (records[TEXT_COLLECTION].recorded, records[TEXT_COLLECTION].state) == (
        "model-b",
        "conflict",
    )
    assert records[VISUAL_COLLECTION].state == "ok"
    changing.record_encoder(TEXT_COLLECTION, "model-a")
    assert recorded() == "model-a" and changing.encoder_changes == {}
    assert {r.state for r in changing.encoder_records()} == {"ok"}
