"""What a lakehouse file's chunks say once: a model's chunk names its columns (their own chunks
hold the descriptions), and no section summary repeats the object chunks beside it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index.filters import all_of, eq, json_eq
from eagle_rag.ingest.knowhere.chunker import ChunkingOptions, chunk_tree
from eagle_rag.ingest.knowhere.tree import build_tree
from eagle_rag.plugins.payloads import QueryRequest
from plugins.lakehouse_bi.chunking import without_repeating_summaries
from plugins.lakehouse_bi.model import COLUMN, MODEL, FileCatalog, SemanticObject
from plugins.lakehouse_bi.render import to_parse_result
from tests.inrepo_plugins.lakehouse.conftest import ingest_files, project_files


def stored(app: EagleApp, kb: str, filename: str, **top: str) -> list[dict[str, Any]]:
    where = all_of(
        eq("kb_name", kb),
        json_eq("metadata", "filename", filename),
        *(eq(k, v) for k, v in top.items()),
    )
    return app.vectors.query("eagle_text", where, limit=16384)


async def test_chunks_say_each_thing_once(lakehouse_app: EagleApp) -> None:
    outcome = await ingest_files(lakehouse_app, "warehouse", project_files())
    assert {n for n, o in outcome.items() if o["status"] != "completed"} == set()

    marts = stored(lakehouse_app, "warehouse", "_marts__models.yml")
    [orders] = [r for r in marts if r["path"] == "warehouse/orders" and r["type"] == "text"]
    assert "Columns (12): order_id integer; customer_id integer" in orders["text"]
    assert "net_amount numeric" in orders["text"]
    # ... but not the columns' descriptions: net_amount's own chunk holds its description.
    assert "Gross paid amount minus refunds" not in orders["text"]
    [net] = [r for r in marts if r["path"] == "warehouse/orders/net_amount"]
    assert "Gross paid amount minus refunds" in net["text"]

    # A model's summary only repeated its chunk and its columns' names: gone. The property
    # file's project heading lists several models and keeps its summary.
    summaries = {r["path"] for r in marts if r["type"] == "section_summary"}
    assert "warehouse/orders" not in summaries and "warehouse/customers" not in summaries
    assert "warehouse" in summaries
    # A .sql file's project heading lists its one model: no summary at all.
    assert stored(lakehouse_app, "warehouse", "orders.sql", type="section_summary") == []
    assert len(stored(lakehouse_app, "warehouse", "orders.sql")) == 1
    # Reading order stays without gaps.
    indexes = sorted(r["chunk_index"] for r in marts)
    assert indexes == list(range(len(marts)))

    # Core's documents in the profile keep Core's chunks, summaries included.
    report = stored(lakehouse_app, "warehouse", "2024_q3_refund_review.md")
    assert any(r["type"] == "section_summary" for r in report)

    # The model chunk still answers the relation question.
    pack = await lakehouse_app.retrieval.search(
        QueryRequest(
            "which table has one row per order with its refunds?",
            kb_names=("warehouse",),
            top_k=5,
        )
    )
    firsts = [(p.filename, p.path) for p in pack.passages[:3]]
    assert ("_marts__models.yml", "warehouse/orders") in firsts, firsts


def chunks_of(description: str) -> tuple[Any, ...]:
    model = SemanticObject(MODEL, "orders", ("orders",), "dbt", description=description)
    column = SemanticObject(COLUMN, "order_id", ("orders", "order_id"), "dbt", model="orders")
    parsed = to_parse_result(FileCatalog("dbt_yaml", (model, column)), filename="m.yml")
    tree = build_tree(parsed, title="warehouse")
    options = ChunkingOptions(chunk_size=64, chunk_overlap=0)
    return chunk_tree(
        tree,
        document_id="d",
        kb_name="kb",
        options=options,
        count_tokens=lambda text: len(text.split()),
    )


def test_a_long_definition_keeps_its_summary() -> None:
    short = chunks_of("One row per order.")
    assert any(c.type == "section_summary" and c.path == "project/orders" for c in short)
    assert not any(
        c.type == "section_summary" and c.path == "project/orders"
        for c in without_repeating_summaries(short)
    )
    # A definition that spans several chunks keeps its way in, as in Core.
    long = chunks_of(" ".join(f"Sentence {i} about orders." for i in range(60)))
    kept = without_repeating_summaries(long)
    assert [c.path for c in kept if c.type == "section_summary"] == ["project/orders"]
    assert len([c for c in kept if c.path == "project/orders" and c.type == "text"]) > 1


def test_a_summary_naming_a_member_the_chunk_lacks_is_kept() -> None:
    [summary, own] = [c for c in chunks_of("One row per order.") if c.path == "project/orders"]
    assert summary.type == "section_summary"
    # The summary lists order_id; a model chunk that does not name it leaves the summary.
    unnamed = replace(own, text="Dbt model orders: One row per order.")
    assert without_repeating_summaries((summary, unnamed))[0].type == "section_summary"
