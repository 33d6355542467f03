"""The lakehouse-bi profile through the real app: typed chunks, filters, lineage, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eagle_rag.bootstrap import EagleApp
from eagle_rag.index.filters import all_of, eq, json_eq
from eagle_rag.plugins.payloads import QueryRequest
from plugins.lakehouse_bi.parser import LakehouseParser, read_file
from tests.inrepo_plugins.lakehouse.conftest import PROJECT, ingest_files, make_app, project_files


def rows(app: EagleApp, kb: str, **metadata: str) -> list[dict[str, Any]]:
    where = all_of(eq("kb_name", kb), *(json_eq("metadata", k, v) for k, v in metadata.items()))
    return app.vectors.query("eagle_text", where, limit=16384)


def semantic_tool(app: EagleApp, name: str) -> Any:
    [spec] = [t for t in app.registries.mcp_tools if t.name == name]
    return spec.handler


async def test_profile_loads_the_plugin_in_its_own_database(lakehouse_app: EagleApp) -> None:
    payload = lakehouse_app.plugins.health_payload()
    assert [p["namespace"] for p in payload["plugins"]] == ["core", "lakehouse-bi"]
    assert set(payload["mcp_tools"]) == {
        "lakehouse_bi_query_semantic_context",
        "lakehouse_bi_retrieve_historical_analysis",
    }
    assert lakehouse_app.vectors.db_name == "lakehouse_bi"
    assert any(r.component.name == "lakehouse-bi" for r in lakehouse_app.registries.parsers)


async def test_a_project_becomes_typed_chunks(lakehouse_app: EagleApp) -> None:
    files = project_files()
    outcome = await ingest_files(lakehouse_app, "warehouse", files)
    assert {n: o["error"] for n, o in outcome.items() if o["status"] != "completed"} == {}

    parser = LakehouseParser()
    expected_columns = sum(
        1
        for name, data in files.items()
        if parser.claims(name, data)
        for o in read_file(data.decode(), name).objects
        if o.object_type == "column"
    )
    columns = rows(lakehouse_app, "warehouse", object_type="column")
    assert len(columns) == expected_columns  # one chunk per column, none lost

    [net] = [r for r in columns if r["path"] == "warehouse/orders/net_amount"]
    meta = net["metadata"]
    assert (meta["model"], meta["data_type"], meta["tests"]) == ("orders", "numeric", ["not_null"])
    assert meta["source_type"] == "dbt" and "of orders" in net["text"]

    [model] = rows(
        lakehouse_app,
        "warehouse",
        object_type="model",
        name="orders",
        filename="_marts__models.yml",
    )
    assert model["path"] == "warehouse/orders"
    assert "Columns (12): order_id integer" in model["text"]
    assert model["metadata"]["grain"] == "one row per order_id"
    assert model["metadata"]["owner"] == "analytics-engineering"
    # The chunk's own lineage is as of its ingest; search hits carry the KB index's, which
    # includes files ingested later (customers.sql refs orders).
    pack = await lakehouse_app.retrieval.search(
        QueryRequest(
            "`orders`",
            kb_names=("warehouse",),
            top_k=3,
            filters={"metadata": {"object_type": "model", "filename": "_marts__models.yml"}},
        )
    )
    fields = pack.passages[0].metadata["fields"]
    assert fields["name"] == "orders" and "customers" in fields["downstream"]
    assert fields["upstream"] == ["order_items", "refunds", "stg_orders", "stg_payments"]

    metric = rows(lakehouse_app, "warehouse", object_type="metric", name="refund_rate")[0]
    assert metric["path"] == "warehouse/metrics/refund_rate"
    explore = rows(lakehouse_app, "warehouse", object_type="explore")[0]
    assert explore["metadata"]["upstream"] == ["customer_facts", "order_facts", "store_facts"]


async def test_filters_and_exact_names_through_search(lakehouse_app: EagleApp) -> None:
    await ingest_files(lakehouse_app, "warehouse", project_files())
    search = lakehouse_app.retrieval.search
    pack = await search(
        QueryRequest(
            "amount",
            kb_names=("warehouse",),
            top_k=10,
            filters={"metadata": {"object_type": "column"}},
        )
    )
    assert pack.passages and {p.metadata["fields"]["object_type"] for p in pack.passages} == {
        "column"
    }

    for question, path in (
        ("what does net_amount include?", "warehouse/orders/net_amount"),
        ("what does `stg_payments`.`amount` mean?", "warehouse/stg_payments/amount"),
        ("finance.invoices.amount_due?", "warehouse/finance.invoices/amount_due"),
        ("净额 net_amount 包含什么？", "warehouse/orders/net_amount"),
    ):
        pack = await search(QueryRequest(question, kb_names=("warehouse",), top_k=3))
        assert pack.passages[0].path == path, question
    # A grain question puts the relations kept at that grain first.
    pack = await search(
        QueryRequest("which model has one row per customer?", kb_names=("warehouse",), top_k=3)
    )
    fields = pack.passages[0].metadata["fields"]
    assert fields["grain"] == "one row per customer_id" and fields["object_type"] == "model"


async def test_lineage_does_not_depend_on_ingest_order(lakehouse_app: EagleApp) -> None:
    files = project_files()
    forward = dict(files)
    backward = dict(reversed(list(files.items())))
    await ingest_files(lakehouse_app, "forward", forward)
    for name, data in backward.items():  # one file at a time, last file first
        await ingest_files(lakehouse_app, "backward", {name: data})
    tool = semantic_tool(lakehouse_app, "lakehouse_bi_query_semantic_context")
    packs = [
        await tool("which table has one row per order with its refunds?", kb_names=[kb], top_k=5)
        for kb in ("forward", "backward")
    ]
    lineages = [
        {o["name"]: o.get("lineage") for o in p["objects"] if o["name"] == "orders"} for p in packs
    ]
    assert lineages[0] == lineages[1] and lineages[0]
    lineage = next(iter(lineages[0].values()))
    assert lineage["upstream"] == ["order_items", "refunds", "stg_orders", "stg_payments"]
    assert {"customers", "orders_semantic", "weekly_revenue_dashboard"} <= set(
        lineage["downstream"]
    )
    assert "ecom.raw_payments" in lineage["all_upstream"]


async def test_a_dbt_macro_file_is_no_model(lakehouse_app: EagleApp) -> None:
    macros = b"{% macro cents_to_dollars(col, scale=2) %}\n  ({{ col }} / 100)\n{% endmacro %}\n"
    outcome = await ingest_files(lakehouse_app, "kb", {"macros/cents_to_dollars.sql": macros})
    assert [o["status"] for o in outcome.values()] == ["completed"]
    assert rows(lakehouse_app, "kb", object_type="model") == []
    assert rows(lakehouse_app, "kb")  # kept as Core's text, still searchable


async def test_a_model_whose_jinja_did_not_render_says_so(lakehouse_app: EagleApp) -> None:
    files = {
        "huge.sql": b"select {{ 'x' * 1000000000 }} as a from {{ ref('stg_orders') }}",
        "unclosed.sql": b"select a from {{ ref('stg_orders') }} {% if x %}\n",
    }
    outcome = await ingest_files(lakehouse_app, "kb", files)
    assert {o["status"] for o in outcome.values()} == {"completed"}
    texts = {
        r["metadata"]["name"]: r["text"] for r in rows(lakehouse_app, "kb", object_type="model")
    }
    assert "Note: the Jinja did not render; output columns unknown" in texts["huge"]
    assert "Note: Jinja not parsed (" in texts["unclosed"]
    assert "lineage may be incomplete" in texts["unclosed"]


def big_manifest(target_bytes: int) -> bytes:
    nodes: dict[str, Any] = {}
    padding = "select 1 -- " + "x" * 250_000
    count = 0
    while count * 500_000 < target_bytes:
        nodes[f"model.big.m{count}"] = {
            "resource_type": "model",
            "name": f"m{count}",
            "description": f"Model number {count}.",
            "raw_code": padding,
            "compiled_code": padding,
            "columns": {"id": {"name": "id", "description": "pk"}},
            "depends_on": {"nodes": [f"model.big.m{count - 1}"] if count else []},
        }
        count += 1
    body = {
        "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
        "nodes": nodes,
    }
    return json.dumps(body).encode()


async def test_bad_files_fail_alone_with_reasons(tmp_path: Path) -> None:
    app = await make_app(tmp_path, "lakehouse-bi")
    try:
        manifest = big_manifest(50 * 1024 * 1024)
        assert len(manifest) >= 50 * 1024 * 1024
        files = {
            "_models.yml": (PROJECT / "models/marts/_marts__models.yml").read_bytes(),
            "broken.yml": b"version: 2\nmodels:\n  - name: a\n    columns: [\n      - name: b\n",
            "broken.view.lkml": b"view: x {\n  dimension: y {\n    sql: ${TABLE}.y ;;\n",
            "heavy.sql": (
                b"{% set cols = ['a', 'b'] %}{{ config(materialized='incremental') }}\n"
                b"select {% for c in cols %}{{ c }}"
                b"{% if not loop.last %}, {% endif %}{% endfor %}\n"
                b"from {{ ref('upstream_model') }}\n{% if is_incremental() %}where ts > "
                b"(select max(ts) from {{ this }}){% endif %}\n{{ my_package.custom_macro(1) }}"
            ),
            "cycle_a.sql": b"select * from {{ ref('cycle_b') }}",
            "cycle_b.sql": b"select * from {{ ref('cycle_a') }}",
            "manifest.json": manifest,
        }
        outcome = await ingest_files(app, "bad", files)
        failed = {n: o["error"] for n, o in outcome.items() if o["status"] == "failed"}
        assert set(failed) == {"broken.yml", "broken.view.lkml"}
        assert "malformed YAML at line" in failed["broken.yml"]
        assert "LookML syntax error" in failed["broken.view.lkml"]
        [heavy] = rows(app, "bad", object_type="model", name="heavy")
        assert heavy["metadata"]["upstream"] == ["upstream_model"]
        assert "Output columns: a, b" in heavy["text"]
        manifest_models = rows(app, "bad", object_type="model", filename="manifest.json")
        assert len(manifest_models) == len(json.loads(manifest)["nodes"])
        tool = semantic_tool(app, "lakehouse_bi_query_semantic_context")
        pack = await tool("cycle_a", kb_names=["bad"], top_k=5, object_types=["model"])
        [cycle] = [o for o in pack["objects"] if o["name"] == "cycle_a"]
        assert cycle["lineage"]["cycle"] == ["cycle_a", "cycle_b", "cycle_a"]
    finally:
        await app.stop()


async def test_core_profile_reads_the_same_files_as_text(tmp_path: Path) -> None:
    app = await make_app(tmp_path, "core")
    try:
        outcome = await ingest_files(
            app, "plain", {"orders.sql": (PROJECT / "models/marts/orders.sql").read_bytes()}
        )
        assert outcome["orders.sql"]["status"] == "completed"
        [row] = rows(app, "plain")[:1]
        assert "object_type" not in row["metadata"]
    finally:
        await app.stop()


async def test_tools_read_completed_documents_only_and_score_in_unit_range(
    lakehouse_app: EagleApp,
) -> None:
    """As a search does (retrieval/scope.py): a document with rows but no completed task is no
    evidence. The score is the relevance Core's tools show, 1 for the object the question names
    (it was the fused value, up to 2, or 1/rank for an exact match)."""
    files = project_files()
    outcome = await ingest_files(lakehouse_app, "warehouse", files)
    assert {n: o["error"] for n, o in outcome.items() if o["status"] != "completed"} == {}
    semantic = semantic_tool(lakehouse_app, "lakehouse_bi_query_semantic_context")
    history = semantic_tool(lakehouse_app, "lakehouse_bi_retrieve_historical_analysis")
    question = "what does net_amount of orders mean?"
    before = await semantic(question, kb_names=["warehouse"], top_k=8)
    [named] = [o for o in before["objects"] if o["path"] == "warehouse/orders/net_amount"]
    assert named["score"] == 1.0
    assert all(0.0 <= o["score"] <= 1.0 for o in before["objects"])
    analyses = await history("weekly revenue", kb_names=["warehouse"], top_k=5)
    assert analyses["analyses"] and all(0.0 <= a["score"] <= 1.0 for a in analyses["analyses"])
    # Never rising down a list, as REST shows scores (0.5191 was listed above 0.5964).
    for listed in (before["objects"], analyses["analyses"]):
        scores = [item["score"] for item in listed]
        assert scores == sorted(scores, reverse=True), scores

    document_id = named["source"]["document_id"]
    repos = lakehouse_app.repositories
    task = repos.tasks.create(document_id=document_id)
    repos.documents.update(document_id, status="processing")
    claimed = repos.ingest_runs.start(task.id, owner="w", lease_s=60, max_attempts=3)
    assert claimed.outcome == "claimed"
    try:
        during = await semantic(question, kb_names=["warehouse"], top_k=8)
        everywhere = await semantic(question, top_k=8)
    finally:
        repos.tasks.finish(task.id, status="completed")
        repos.documents.update(document_id, status="completed")
    for pack in (during, everywhere):
        assert pack["objects"]
        assert document_id not in {o["source"]["document_id"] for o in pack["objects"]}
    assert document_id in {o["source"]["document_id"] for o in before["objects"]}
