"""Cube JavaScript models: read (never run) into the same objects as Cube YAML, ingested through
the real app next to the YAML model they join, and refused clearly when they cannot be read."""

from __future__ import annotations

import pytest

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import TEXT
from eagle_rag.ingest.parsers.registry import builtin_parsers, parser_for
from eagle_rag.plugins.payloads import QueryRequest
from plugins.lakehouse_bi.model import SemanticObject
from plugins.lakehouse_bi.parser import LakehouseParser, read_file
from plugins.lakehouse_bi.parsers.cube_js import snake
from tests.inrepo_plugins.lakehouse.conftest import PROJECT, ingest_files
from tests.inrepo_plugins.lakehouse.test_app import rows

ORDERS_JS = b"""// Cube model, JavaScript flavour (schema/orders.js)
const tableName = 'analytics.orders';

cube(`orders_cube`, {
  sqlTable: `analytics.orders`,
  description: 'One row per order, with its payment totals.',
  joins: {
    products_cube: {
      relationship: `many_to_one`,
      sql: `${CUBE}.product_id = ${products_cube}.product_id`,
    },
  },
  measures: {
    count: { type: `count`, drillMembers: [order_id, ordered_at] },
    refundedAmount: {
      sql: () => `refund_amount`,
      type: "sum",
      description: "Money returned to customers for refunded orders.",
    },
    paidShare: {
      sql: function () { return `${paidCount} / NULLIF(${count}, 0)`; },
      type: `number`,
      format: `percent`,
    },
  },
  dimensions: {
    order_id: { sql: `order_id`, type: `number`, primaryKey: true },
    status: { sql: `status`, type: `string`, title: `Order status` },
    ordered_at: { sql: `ordered_at`, type: `time` },
  },
});

view(`orders_view`, {
  description: `Orders with their products`,
  cubes: [{ join_path: orders_cube, includes: `*` }, { join_path: orders_cube.products_cube }],
});
"""


def by_path(text: bytes, name: str = "orders.js") -> dict[tuple[str, ...], SemanticObject]:
    return {o.path: o for o in read_file(text.decode(), name).objects}


def test_a_js_model_reads_like_its_yaml_twin() -> None:
    found = by_path(ORDERS_JS)
    cube = found[("orders_cube",)]
    assert (cube.object_type, cube.grain) == ("cube", "one row per order_id")
    assert cube.upstream == ("orders", "products_cube")
    assert "One row per order" in cube.description
    details = dict(cube.details)
    assert details["Join products_cube"].startswith("many_to_one; ${CUBE}.product_id")
    refunded = found[("orders_cube", "refundedAmount")]
    assert (refunded.object_type, refunded.data_type) == ("measure", "sum")
    assert refunded.expression == "refund_amount"
    share = found[("orders_cube", "paidShare")]
    assert share.expression == "${paidCount} / NULLIF(${count}, 0)"
    status = found[("orders_cube", "status")]
    assert (status.object_type, status.description) == ("dimension", "Order status")
    assert dict(found[("orders_cube", "order_id")].details) == {"Primary key": "yes"}
    view = found[("orders_view",)]
    assert (view.object_type, view.upstream) == ("view", ("orders_cube", "products_cube"))
    assert snake("preAggregations") == "pre_aggregations" and snake("sql_table") == "sql_table"


def test_only_cube_js_is_claimed() -> None:
    parser = LakehouseParser()
    assert parser.claims("orders.js", ORDERS_JS)
    plain = b"export function add(a, b) { return a + b }\n"
    assert not parser.claims("util.js", plain)
    chosen = parser_for(TEXT, [*builtin_parsers(), parser], filename="util.js", data=plain)
    assert chosen is not parser  # an ordinary script stays a Core text document


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (b"cube(`orders`, {\n  sql: `SELECT 1`,\n  measures: {\n    count: { type: `count`\n",
         "JavaScript syntax error at line"),
        (b"['a', 'b'].forEach((n) => cube(`${n}_orders`, { sql: `SELECT 1` }));\n",
         "need a JavaScript runtime"),
        (b"cube(name, { sql: `SELECT 1` });\n", "literal name"),
    ],
)  # fmt: skip
def test_unreadable_js_models_are_refused_with_a_reason(source: bytes, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        read_file(source.decode(), "bad.js")


async def test_js_models_ingest_with_the_project(lakehouse_app: EagleApp) -> None:
    files = {
        "orders.js": ORDERS_JS,
        "supply_chain.yml": (PROJECT / "cube/supply_chain.yml").read_bytes(),
        "broken.js": b"cube(`x`, {\n  sql: `SELECT 1`,\n",
    }
    outcome = await ingest_files(lakehouse_app, "cubes", files)
    assert outcome["orders.js"]["status"] == "completed", outcome["orders.js"]["error"]
    assert outcome["broken.js"]["status"] == "failed"
    assert "JavaScript syntax error" in outcome["broken.js"]["error"]

    measures = rows(lakehouse_app, "cubes", object_type="measure", model="orders_cube")
    assert {r["metadata"]["name"] for r in measures} == {"count", "refundedAmount", "paidShare"}
    assert all(r["metadata"]["source_type"] == "cube" for r in measures)
    [cube] = rows(lakehouse_app, "cubes", object_type="cube", name="orders_cube")
    assert cube["path"] == "cubes/orders_cube"
    pack = await lakehouse_app.retrieval.search(
        QueryRequest("what is refundedAmount?", kb_names=("cubes",), top_k=3)
    )
    assert pack.passages[0].path == "cubes/orders_cube/refundedAmount"
    # The JS cube joins the YAML one: products_cube learns its downstream across the two files.
    pack = await lakehouse_app.retrieval.search(
        QueryRequest(
            "`products_cube`", kb_names=("cubes",), top_k=3, filters={"object_type": "cube"}
        )
    )
    fields = pack.passages[0].metadata["fields"]
    assert fields["name"] == "products_cube" and "orders_cube" in fields["downstream"]
