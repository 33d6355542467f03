"""Same-named objects of different kinds are different lineage nodes."""

from __future__ import annotations

from typing import Any

from eagle_rag.bootstrap import EagleApp
from eagle_rag.plugins.payloads import QueryRequest
from tests.inrepo_plugins.lakehouse.conftest import ingest_files

ORDERS_LKML = b"""view: orders {
  sql_table_name: analytics.fct_orders ;;
  dimension: order_id { primary_key: yes type: number }
  measure: total_revenue { type: sum sql: ${TABLE}.order_total ;; }
}
view: customer_ltv { sql_table_name: analytics.customer_ltv ;; }
explore: orders { join: customer_ltv { relationship: many_to_one } }
"""
METRICS = b"""version: 2
semantic_models:
  - name: orders_sm
    model: ref('fct_orders')
    entities: [{name: order, type: primary, expr: order_id}]
    measures: [{name: order_count, agg: count, expr: order_id}]
metrics:
  - name: orders
    type: simple
    type_params: {measure: order_count}
"""
FILES = {
    "orders.view.lkml": ORDERS_LKML,
    "metrics.yml": METRICS,
    "dim_customers.sql": b"select customer_id, email from {{ ref('stg_customers') }}",
    "dim_customers.view.lkml": b"""view: dim_customers {
  sql_table_name: analytics.dim_customers ;;
  dimension: customer_id { primary_key: yes type: number }
}""",
}


async def test_a_view_an_explore_and_a_metric_named_alike_keep_their_lineage(
    lakehouse_app: EagleApp,
) -> None:
    await ingest_files(lakehouse_app, "kb", FILES)

    async def found(query: str, filters: dict[str, Any]) -> dict[tuple[str, str], Any]:
        request = QueryRequest(query, kb_names=("kb",), top_k=30, filters=filters)
        pack = await lakehouse_app.retrieval.search(request)
        return {
            (f["object_type"], f["name"]): (f.get("upstream"), f.get("downstream"))
            for f in (p.metadata["fields"] for p in pack.passages)
        }

    orders = await found("orders total_revenue", {"model": "orders"})
    # the view reads fct_orders; the explore of the same name reads the view
    assert orders[("view", "orders")] == (["fct_orders"], ["orders"])
    assert orders[("measure", "total_revenue")] == (["fct_orders"], ["orders"])
    named = await found("orders", {"name": "orders"})
    assert named[("explore", "orders")] == (["customer_ltv", "orders"], None)
    assert named[("metric", "orders")] == (["order_count", "orders_sm"], None)

    customers = await found("dim_customers", {"name": "dim_customers"})
    assert customers[("model", "dim_customers")] == (["stg_customers"], ["dim_customers"])
    assert customers[("view", "dim_customers")] == (["dim_customers"], None)
    built_on = await found("customers", {"upstream": "dim_customers"})
    assert set(built_on) == {("view", "dim_customers"), ("dimension", "customer_id")}
