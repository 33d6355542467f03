"""The lakehouse readers on real file shapes: what each object becomes, and clear refusals."""

from __future__ import annotations

import json
import time

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import TEXT
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.registry import builtin_parsers, parser_for
from plugins.lakehouse_bi.hints import question_terms
from plugins.lakehouse_bi.jinja import render_sql
from plugins.lakehouse_bi.model import SemanticObject
from plugins.lakehouse_bi.parser import LakehouseParser, read_file
from tests.inrepo_plugins.lakehouse.conftest import PROJECT


def objects(name: str, text: str) -> dict[tuple[str, ...], SemanticObject]:
    return {o.path: o for o in read_file(text, name).objects}


def test_dbt_property_file_gives_models_columns_tests_and_grain() -> None:
    found = objects("m.yml", (PROJECT / "models/marts/_marts__models.yml").read_text())
    orders = found[("orders",)]
    assert orders.object_type == "model" and orders.grain == "one row per order_id"
    assert orders.owner == "analytics-engineering" and orders.tags == ("finance", "core")
    net = found[("orders", "net_amount")]
    assert (net.object_type, net.model, net.data_type) == ("column", "orders", "numeric")
    assert "excludes failed payment attempts" in net.description
    customer = found[("orders", "customer_id")]
    assert customer.tests == ("not_null", "relationships(customers.customer_id)")
    assert found[("customers",)].grain == "one row per customer_id"  # from unique + not_null
    assert found[("exposures", "weekly_revenue_dashboard")].upstream == ("orders", "locations")


def test_sources_and_semantic_layer() -> None:
    sources = objects("s.yml", (PROJECT / "models/staging/_stg__sources.yml").read_text())
    payments = sources[("ecom.raw_payments",)]
    assert (
        payments.object_type == "source_table"
        and ("Relation", "raw.raw_payments") in payments.details
    )
    assert sources[("ecom.raw_payments", "amount")].model == "ecom.raw_payments"
    semantic = objects("sem.yml", (PROJECT / "models/marts/_semantic__models.yml").read_text())
    model = semantic[("orders_semantic",)]
    assert model.upstream == ("orders",) and model.grain == "one row per order"
    assert semantic[("orders_semantic", "gross_revenue")].expression == "sum(gross_amount)"
    rate = semantic[("metrics", "refund_rate")]
    assert rate.expression == "ratio: numerator refunded_orders; denominator order_count"
    assert semantic[("metrics", "average_order_value")].upstream == (
        "net_revenue",
        "order_count_metric",
    )


def test_metric_parameters_that_change_its_value_are_kept() -> None:
    found = objects(
        "metrics.yml",
        """version: 2
metrics:
  - name: revenue_growth_mom
    type: derived
    type_params:
      expr: revenue - revenue_prev
      metrics: [{name: revenue}, {name: revenue, offset_window: 1 month, alias: revenue_prev}]
  - name: revenue_7d
    type: cumulative
    type_params: {measure: revenue_total, window: 7 days}
  - name: revenue_mtd
    type: cumulative
    type_params: {measure: revenue_total, cumulative_type_params: {grain_to_date: month}}
""",
    )
    expressions = {key[1]: o.expression for key, o in found.items()}
    assert expressions == {
        "revenue_growth_mom": "derived: expr revenue - revenue_prev; "
        "of metrics revenue, revenue (offset_window 1 month) as revenue_prev",
        "revenue_7d": "cumulative: measure revenue_total; window 7 days",
        "revenue_mtd": "cumulative: measure revenue_total; grain_to_date month",
    }
    assert found[("metrics", "revenue_growth_mom")].upstream == ("revenue",)


def test_sql_models_keep_lineage_through_heavy_jinja() -> None:
    model = read_file((PROJECT / "models/marts/orders.sql").read_text(), "orders.sql").objects[0]
    assert model.upstream == ("stg_orders", "stg_payments", "refunds", "order_items")
    details = dict(model.details)
    assert details["Materialized"] == "table"
    assert "net_amount" in details["Output columns"].split(", ")
    # Unknown tags (a custom materialization) do not parse: lineage is still read, with a note.
    catalog = read_file(
        "{% materialization custom %}{% endmaterialization %}\n"
        "select * from {{ ref('a') }} join {{ source('raw', 'b') }}",
        "odd.sql",
    )
    assert catalog.objects[0].upstream == ("a", "raw.b")
    assert "Jinja not parsed" in catalog.notes[0]


def test_a_template_that_would_run_for_hours_stops_within_its_budget() -> None:
    """Two nested range(100000) loops ran 10^10 steps on the worker's event loop (and again
    after every restart); a huge repeated string is one step but any size."""
    loops = (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n"
        "select 1 as a from {{ ref('stg_orders') }}"
    )
    started = time.perf_counter()
    catalog = read_file(loops, "loop.sql")
    assert time.perf_counter() - started < 10
    assert catalog.objects[0].upstream == ("stg_orders",)  # lineage kept, from the AST
    assert "did not render" in " ".join(catalog.notes)
    assert render_sql("{{ 'x' * 1000000000 }} select 1") is None
    assert render_sql("{{ 2 ** 100000000 }}") is None
    assert render_sql("select {{ 'a' * 3 }} from {{ ref('t') }}") == "select aaa from t"


def test_self_reference_is_noted_not_followed() -> None:
    catalog = read_file("select * from {{ ref('loop') }} join {{ ref('other') }}", "loop.sql")
    assert catalog.objects[0].upstream == ("other",)
    assert "references itself" in catalog.notes[0]


def test_ddl_tables_views_and_comments() -> None:
    found = objects("ddl.sql", (PROJECT / "warehouse/finance_ddl.sql").read_text())
    invoices = found[("finance.invoices",)]
    assert (
        invoices.object_type == "table" and invoices.description == "One row per wholesale invoice"
    )
    due = found[("finance.invoices", "amount_due")]
    assert due.data_type == "DECIMAL(12, 2)" and due.description == "Amount owed including VAT"
    assert found[("finance.unpaid_invoices",)].upstream == ("finance.invoices",)
    comments = objects(
        "c.sql",
        "CREATE TABLE s.t (a INT, b TEXT);\nCOMMENT ON TABLE s.t IS 'tbl';\n"
        "COMMENT ON COLUMN s.t.b IS 'the b';",
    )
    assert comments[("s.t",)].description == "tbl" and comments[("s.t", "b")].description == "the b"


def test_ddl_column_types_are_the_files_own_words() -> None:
    """sqlglot renders `float8` as `DOUBLE` (not a PostgreSQL type) and `text` per dialect."""
    found = objects(
        "t.sql",
        "create table s.t (\n  a float8 not null,\n  b double precision comment 'x',\n"
        "  c timestamp with time zone default now(),\n  d character varying(20) references o(id)"
        ",\n  e numeric(5, 1)\n, f text);",
    )
    written = {key[1]: found[key].data_type for key in found if len(key) == 2}
    assert written == {
        "a": "float8",
        "b": "double precision",
        "c": "timestamp with time zone",
        "d": "character varying(20)",
        "e": "numeric(5, 1)",
        "f": "text",
    }
    assert found[("s.t", "a")].tests == ("not_null",)


def test_ddl_keys_read_as_dbt_tests_and_the_primary_key_is_the_grain() -> None:
    """A foreign key read `references_raw.orders_(order_id)` beside dbt's
    `relationships(stg_orders.customer_id)`, and a primary key gave no grain."""
    found = objects(
        "ddl.sql",
        "CREATE TABLE raw.payments (\n  payment_id INTEGER PRIMARY KEY,\n"
        "  order_id INTEGER NOT NULL REFERENCES raw.orders(order_id),\n  amount NUMERIC(12,2)\n);",
    )
    # Types as the file writes them: sqlglot's rendering said DECIMAL(12, 2).
    assert found[("raw.payments", "amount")].data_type == "NUMERIC(12,2)"
    assert found[("raw.payments",)].grain == "one row per payment_id"
    assert found[("raw.payments", "payment_id")].tests == ("primary_key",)
    assert found[("raw.payments", "order_id")].tests == (
        "not_null",
        "relationships(raw.orders.order_id)",
    )


def test_ddl_table_level_and_altered_keys_are_tests_and_grain() -> None:
    created = "CREATE TABLE public.invoices (invoice_id BIGINT NOT NULL, account_id BIGINT{});"
    keys = (
        ", PRIMARY KEY (invoice_id), CONSTRAINT fk_acct FOREIGN KEY (account_id) "
        "REFERENCES public.accounts (account_id)"
    )
    altered = created.format("") + (
        "\nALTER TABLE public.invoices ADD CONSTRAINT pk PRIMARY KEY (invoice_id);"
        "\nALTER TABLE public.invoices ADD CONSTRAINT fk FOREIGN KEY (account_id) "
        "REFERENCES public.accounts (account_id);"
    )
    for text in (created.format(keys), altered):
        found = objects("pg.sql", text)
        assert found[("public.invoices",)].grain == "one row per invoice_id", text
        assert found[("public.invoices", "invoice_id")].tests == ("not_null", "primary_key")
        assert found[("public.invoices", "account_id")].tests == (
            "relationships(public.accounts.account_id)",
        )


def test_ddl_names_keep_their_database_and_bigquery_backticks() -> None:
    found = objects(
        "three.sql",
        "CREATE TABLE prod.public.accounts (a INT);\nCREATE TABLE dev.public.accounts (b INT);",
    )
    assert {k for k in found if len(k) == 1} == {
        ("prod.public.accounts",),
        ("dev.public.accounts",),
    }
    # The generic dialect kept this as an opaque command, and the file became a dbt model "bq".
    found = objects(
        "bq.sql",
        "CREATE TABLE `acme-prod.marts.sessions` (\n"
        '  session_id STRING NOT NULL OPTIONS(description="Session key"),\n  user_email STRING);',
    )
    session = found[("acme-prod.marts.sessions", "session_id")]
    assert (session.object_type, session.data_type, session.tests) == (
        "column",
        "STRING",
        ("not_null",),
    )
    assert session.description == "Session key"


def test_lookml_views_fields_and_explores() -> None:
    view = objects("v.lkml", (PROJECT / "lookml/order_facts.view.lkml").read_text())
    assert view[("order_facts",)].grain == "one row per order_id"
    assert view[("order_facts",)].upstream == ("orders",)  # sql_table_name analytics.orders
    sales = view[("order_facts", "total_net_sales")]
    assert (sales.object_type, sales.data_type, sales.expression) == (
        "measure",
        "sum",
        "${TABLE}.net_amount",
    )
    explore = objects("m.lkml", (PROJECT / "lookml/jaffle.model.lkml").read_text())[
        ("explores", "order_facts")
    ]
    assert explore.upstream == ("order_facts", "customer_facts", "store_facts")


def test_quoted_table_names_read_the_relation_without_quotes() -> None:
    views = objects(
        "v.view.lkml",
        """view: bq { sql_table_name: `acme-prod.marts.fct_orders` ;; }
view: sf { sql_table_name: "ANALYTICS"."MARTS"."fct_orders" ;; }
view: ms { sql_table_name: [dbo].[fct_orders] ;; }
view: plain { sql_table_name: marts.fct_orders ;; }""",
    )
    assert {v.name: v.upstream for v in views.values()} == dict.fromkeys(
        ("bq", "sf", "ms", "plain"), ("fct_orders",)
    )
    cube = objects("c.yml", 'cubes:\n  - name: c\n    sql_table: \'"MARTS"."fct_orders"\'\n')
    assert cube[("c",)].upstream == ("fct_orders",)


def test_a_lookml_refinement_adds_to_the_view_it_refines() -> None:
    found = objects(
        "orders_refinements.lkml",
        """view: +orders {
  dimension: is_big_order { type: yesno sql: ${TABLE}.order_total > 100 ;; }
}
explore: +orders { join: customers { relationship: many_to_one } }""",
    )
    view = found[("orders",)]
    assert (view.object_type, view.name, view.details) == (
        "view",
        "orders",
        (("Refines", "orders"),),
    )
    big = found[("orders", "is_big_order")]
    assert (big.object_type, big.model) == ("dimension", "orders")
    explore = found[("explores", "orders")]
    assert explore.name == "orders" and explore.upstream == ("orders", "customers")


def test_cube_yaml() -> None:
    cube = objects("c.yml", (PROJECT / "cube/supply_chain.yml").read_text())
    assert cube[("supplies_cube",)].upstream == ("supplies", "products_cube")
    assert cube[("supplies_cube", "total_supply_cost")].object_type == "measure"


def test_manifest_resolves_tests_and_lineage() -> None:
    manifest = {
        "metadata": {
            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
            "project_name": "shop",
        },
        "nodes": {
            "model.shop.orders": {
                "resource_type": "model",
                "name": "orders",
                "description": "One row per order.",
                "columns": {
                    "order_id": {"name": "order_id", "description": "pk", "data_type": "int"}
                },
                "depends_on": {"nodes": ["model.shop.stg_orders", "source.shop.raw.orders"]},
                "config": {"materialized": "table"},
            },
            "model.shop.stg_orders": {
                "resource_type": "model",
                "name": "stg_orders",
                "columns": {},
            },
            "test.shop.unique_orders_order_id": {
                "resource_type": "test",
                "attached_node": "model.shop.orders",
                "column_name": "order_id",
                "test_metadata": {"name": "unique"},
            },
            "test.shop.not_null_orders_order_id": {
                "resource_type": "test",
                "attached_node": "model.shop.orders",
                "column_name": "order_id",
                "test_metadata": {"name": "not_null"},
            },
        },
        "sources": {
            "source.shop.raw.orders": {
                "resource_type": "source",
                "source_name": "raw",
                "name": "orders",
                "columns": {},
            }
        },
    }
    found = objects("manifest.json", json.dumps(manifest))
    assert found[("orders",)].upstream == ("stg_orders", "raw.orders")
    assert found[("orders",)].grain == "one row per order_id"
    assert found[("orders", "order_id")].tests == ("unique", "not_null")
    assert ("raw.orders",) in found


def test_docs_blocks() -> None:
    found = objects("docs.md", (PROJECT / "models/docs.md").read_text())
    assert found[("docs", "fiscal_calendar")].description.startswith("The finance team closes")


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("bad.yml", "models:\n  - name: a\n    columns: [\n", "malformed YAML at line"),
        ("bad.lkml", "view: x { dimension: y { sql: a ;; ", "LookML syntax error"),
        ("bad.json", '{"metadata": {"dbt_schema_version": 1}, "nodes": ', "malformed JSON"),
        ("k8s.yml", "models:\n  replicas: 3\n", "defines no model"),
        ("broken.sql", "select {{ ref('a' }}", "could not be read"),
    ],
)
def test_bad_files_are_refused_with_their_reason(name: str, text: str, reason: str) -> None:
    parser = LakehouseParser()
    with pytest.raises(InvalidInputError, match=reason):
        parser.parse(ParseContext(text.encode(), name, TEXT))


def test_the_parser_claims_semantic_files_only() -> None:
    parser = LakehouseParser()
    assert parser.claims("orders.sql", b"select 1")
    assert parser.claims("x.view.lkml", b"view: x {}")
    assert parser.claims("_models.yml", b"version: 2\nmodels:\n  - name: a\n")
    assert parser.claims("manifest.json", b'{"metadata": {"dbt_schema_version": "v12"}}')
    assert not parser.claims("compose.yml", b"services:\n  web: {}\n")
    assert not parser.claims("notes.md", b"# Notes\nplain text")
    assert not parser.claims("data.json", b'{"a": 1}')
    macros = b"{% macro cents_to_dollars(col) %}\n  ({{ col }} / 100)\n{% endmacro %}\n"
    assert not parser.claims("macros/cents_to_dollars.sql", macros)  # Core's text, no model
    assert parser.claims("m.sql", macros + b"select {{ cents_to_dollars('amount') }} from t")
    with pytest.raises(InvalidInputError, match="macros, not a model"):
        read_file(macros.decode(), "cents_to_dollars.sql")
    # Core's selection: a claim wins for text types, never for binary ones.
    parsers = [*builtin_parsers(), parser]
    assert parser_for(TEXT, parsers, filename="orders.sql", data=b"select 1") is parser
    assert parser_for(TEXT, parsers, filename="notes.txt", data=b"hello").name == "text"
    assert parser_for("application/pdf", parsers, filename="a.sql", data=b"%PDF").name == "pdf"


def test_question_terms() -> None:
    terms = question_terms(
        "what does `stg_payments`.`amount` mean for raw.orders and net_amount? 退款"
    )
    assert terms.identifiers == ("stg_payments.amount", "raw.orders", "net_amount")
    assert terms.translations == ("refund", "refunds")
    assert question_terms("how many orders?").identifiers == ()


def test_missing_extras_are_named_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from plugins.lakehouse_bi import requirements

    assert requirements.missing() == []
    monkeypatch.setitem(requirements.REQUIRED, "lakehouse_not_installed", "sqlglot-x")
    with pytest.raises(
        ImportError, match=r"needs sqlglot-x: pip install 'eagle-rag\[lakehouse-bi\]'"
    ):
        requirements.check()
