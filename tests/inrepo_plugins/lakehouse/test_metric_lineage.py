"""A MetricFlow metric's lineage reaches the dbt models its measures are computed from."""

from __future__ import annotations

from typing import Any

from eagle_rag.bootstrap import EagleApp
from eagle_rag.plugins.payloads import QueryRequest
from tests.inrepo_plugins.lakehouse.conftest import ingest_files
from tests.inrepo_plugins.lakehouse.test_app import semantic_tool

SEMANTIC = b"""version: 2
semantic_models:
  - name: orders_sm
    model: ref('fct_orders')
    entities: [{name: order, type: primary, expr: order_id}]
    measures: [{name: revenue_total, agg: sum, expr: order_total}]
"""
METRICS = b"""version: 2
metrics:
  - name: revenue
    type: simple
    type_params: {measure: revenue_total}
"""
FILES = {
    "stg_orders.sql": b"select * from {{ source('shop', 'raw_orders') }}",
    "fct_orders.sql": b"select order_id, amount as order_total from {{ ref('stg_orders') }}",
    "metrics.yml": METRICS,  # the metric's file comes before its measure's
    "semantic.yml": SEMANTIC,
}


async def test_a_metric_reaches_the_models_of_its_measures(lakehouse_app: EagleApp) -> None:
    await ingest_files(lakehouse_app, "kb", FILES)

    async def found(filters: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
        request = QueryRequest("revenue", kb_names=("kb",), top_k=20, filters=filters)
        pack = await lakehouse_app.retrieval.search(request)
        return {
            (f["object_type"], f["name"]): f for f in (p.metadata["fields"] for p in pack.passages)
        }

    [metric] = (await found({"object_type": "metric"})).values()
    assert metric["upstream"] == ["orders_sm", "revenue_total"]
    built_from = await found({"downstream": "revenue"})
    assert {("semantic_model", "orders_sm"), ("measure", "revenue_total")} <= set(built_from)
    assert set(await found({"upstream": "orders_sm", "object_type": "metric"})) == {
        ("metric", "revenue")
    }

    tool = semantic_tool(lakehouse_app, "lakehouse_bi_query_semantic_context")
    pack = await tool("which models feed the revenue metric", kb_names=["kb"], top_k=8,
                      object_types=["metric"])  # fmt: skip
    [item] = pack["objects"]
    assert item["lineage"]["of"] == "revenue"
    assert item["lineage"]["all_upstream"] == [
        "orders_sm", "revenue_total", "fct_orders", "stg_orders", "shop.raw_orders"
    ]  # fmt: skip
