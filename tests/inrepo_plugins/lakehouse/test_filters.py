"""Top-level filters on the plugin's fields (``{"object_type": "column"}``, lineage's
``{"upstream": "stg_orders"}``), through the real HTTP app on Milvus Lite and a real MCP client;
the same keys stay unknown where the plugin is not loaded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from eagle_rag.bootstrap import EagleApp
from eagle_rag.errors import ComponentError, InvalidInputError
from eagle_rag.index.filters import eq
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import ComponentRegistries, PluginContext
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.retrieval.filters import build_metadata_filter
from eagle_rag.settings import load_settings
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.inrepo_plugins.lakehouse.conftest import PROJECT, ingest_files, make_app, project_files

FILES = (
    "models/marts/_marts__models.yml",
    "models/marts/orders.sql",
    "models/staging/_stg__models.yml",
    "models/staging/stg_orders.sql",
)
LAKEHOUSE = {
    "enabled": ["eagle_rag.plugins.core_defaults", "plugins.lakehouse_bi"],
    "default_namespace": "lakehouse-bi",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("lakehouse-filters"), plugins=LAKEHOUSE) as running:
        client = running.client()
        assert client.post("/knowledge_bases", json={"kb_name": "warehouse"}).status_code < 300
        for relative in FILES:
            path = PROJECT / relative
            response = client.post(
                "/ingest",
                data={"kb_name": "warehouse"},
                files={"file": (path.name, path.read_bytes())},
            )
            assert response.status_code < 300, response.text
            assert wait_for_task(client, response.json()["job_id"])["status"] == "completed"
        yield running


def search(server: RunningServer, filters: dict[str, Any], query: str = "order amount") -> Any:
    body = {"query": query, "kb_names": ["warehouse"], "top_k": 20, "filters": filters}
    return server.client().post("/search", json=body)


def fields_of(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    sources = response.json()["sources"]["text"]
    assert sources, "the filter selected nothing"
    return [s["metadata"] for s in sources]


def test_top_level_fields_mean_the_same_as_under_metadata(server: RunningServer) -> None:
    wanted = {"object_type": "column", "model": "orders"}
    top = fields_of(search(server, wanted))
    nested = fields_of(search(server, {"metadata": wanted}))
    assert all((f["object_type"], f["model"]) == ("column", "orders") for f in top)
    assert [f["name"] for f in top] == [f["name"] for f in nested]
    # and they combine with Core's own filters and with the metadata form
    mixed = fields_of(
        search(server, {"object_type": "column", "metadata": {"model": "stg_orders"}})
    )
    assert {(f["object_type"], f["model"]) for f in mixed} == {("column", "stg_orders")}
    models = fields_of(search(server, {"object_type": ["model", "source_table"]}))
    assert {f["object_type"] for f in models} <= {"model", "source_table"}


def test_list_fields_select_chunks_holding_a_value(server: RunningServer) -> None:
    tagged = fields_of(search(server, {"tags": "finance", "object_type": "model"}, "orders"))
    assert tagged and all("finance" in f["tags"] for f in tagged)
    assert {f["name"] for f in tagged} == {"orders"}  # stg_orders is tagged "staging" only
    either = fields_of(search(server, {"tags": ["staging", "finance"], "object_type": "model"}))
    assert {f["name"] for f in either} == {"orders", "stg_orders"}
    unique = fields_of(search(server, {"tests": "unique", "object_type": "column"}))
    assert all("unique" in f["tests"] for f in unique)
    assert "order_id" in {f["name"] for f in unique}
    # under metadata a list field means the same: its list holds any of the values
    for value in ("finance", ["finance"]):
        nested = search(server, {"metadata": {"tags": value}, "object_type": "model"}, "orders")
        assert [f["name"] for f in fields_of(nested)] == [f["name"] for f in tagged]


def test_bad_top_level_filters_name_the_key(server: RunningServer) -> None:
    unknown = search(server, {"objecttype": "column"})
    assert unknown.status_code in (400, 422)
    assert "objecttype" in unknown.text and "object_type" in unknown.text  # known ones listed
    nested_value = search(server, {"tags": {"gte": 1}})
    assert nested_value.status_code in (400, 422) and "tags" in nested_value.text
    empty = search(server, {"tests": []})
    assert empty.status_code in (400, 422) and "tests" in empty.text


async def test_mcp_retrieve_takes_top_level_fields(server: RunningServer) -> None:
    async with Client(StreamableHttpTransport(server.url + "/mcp")) as client:
        result = await client.call_tool(
            "core_retrieve_text",
            {"query": "order amount", "kb_names": ["warehouse"], "top_k": 10,
             "filters": {"object_type": "column", "model": "orders"}},
        )  # fmt: skip
    sources = result.structured_content["sources"]
    assert sources and all(
        (s["metadata"]["object_type"], s["metadata"]["model"]) == ("column", "orders")
        for s in sources
    )


def test_without_the_plugin_the_fields_are_unknown(tmp_path: Path) -> None:
    with running_server(tmp_path) as core:
        client = core.client()
        assert client.post("/knowledge_bases", json={"kb_name": "plain"}).status_code < 300
        response = client.post(
            "/search", json={"query": "x", "kb_names": ["plain"], "filters": {"object_type": "c"}}
        )
    assert response.status_code in (400, 422) and "unknown filter 'object_type'" in response.text


def test_lineage_filters_select_what_the_hits_show(server: RunningServer) -> None:
    # orders.sql refs stg_orders; the orders model and columns of the marts schema.yml store no
    # upstream of their own, the filter finds them through the KB's lineage index
    built_on = fields_of(search(server, {"upstream": "stg_orders"}))
    assert all("stg_orders" in f["upstream"] for f in built_on)
    assert {f["model"] for f in built_on} == {"orders"}
    assert {f["framework"] for f in built_on} == {"dbt_yaml", "dbt_sql"}
    columns = fields_of(search(server, {"upstream": "stg_orders", "object_type": "column"}))
    assert {"net_amount", "refund_amount", "order_id"} <= {f["name"] for f in columns}
    assert all((f["object_type"], f["model"]) == ("column", "orders") for f in columns)
    # downstream: what orders is built from (stg_orders also from its own .sql file)
    feeds = fields_of(search(server, {"downstream": "orders", "object_type": "model"}, "orders"))
    assert all("orders" in f["downstream"] for f in feeds)
    assert {f["name"] for f in feeds} == {"stg_orders", "stg_payments", "order_items", "refunds"}
    # a source is named schema.table, and a list means any of them
    either = fields_of(
        search(server, {"upstream": ["ecom.raw_orders", "stg_payments"], "object_type": "model"})
    )
    assert {f["name"] for f in either} == {"stg_orders", "orders"}
    nothing = search(server, {"upstream": "no_such_model"})
    assert nothing.status_code == 200 and nothing.json()["sources"]["text"] == []


def test_exact_name_matches_keep_to_the_lineage_filter(server: RunningServer) -> None:
    question = "what does net_amount include?"
    named = fields_of(search(server, {"upstream": "stg_orders"}, question))
    assert (named[0]["name"], named[0]["model"]) == ("net_amount", "orders")
    # the exact-name supplement obeys the filter too: orders is not built on the raw source
    elsewhere = search(server, {"upstream": "ecom.raw_orders"}, question)
    assert "net_amount" not in {f["name"] for f in fields_of(elsewhere)}


def test_lineage_filters_follow_files_ingested_later(server: RunningServer) -> None:
    client = server.client()
    assert client.post("/knowledge_bases", json={"kb_name": "later"}).status_code < 300

    def ingest(relative: str) -> None:
        path = PROJECT / relative
        response = client.post(
            "/ingest", data={"kb_name": "later"}, files={"file": (path.name, path.read_bytes())}
        )
        assert wait_for_task(client, response.json()["job_id"])["status"] == "completed"

    def built_on_stg_orders() -> list[Any]:
        body = {"query": "order amount", "kb_names": ["later"], "top_k": 20,
                "filters": {"upstream": "stg_orders", "object_type": "column"}}  # fmt: skip
        response = client.post("/search", json=body)
        assert response.status_code == 200, response.text
        return [s["metadata"]["name"] for s in response.json()["sources"]["text"]]

    ingest("models/marts/_marts__models.yml")
    # this KB does not know orders.sql yet (the "warehouse" KB's lineage is not this one's)
    assert built_on_stg_orders() == []
    ingest("models/marts/orders.sql")
    assert "net_amount" in built_on_stg_orders()  # the earlier file's columns, now selected


async def test_lineage_filters_on_semantic_layer_objects(lakehouse_app: EagleApp) -> None:
    names = ("_semantic__models.yml", "_marts__models.yml", "jaffle.model.lkml",
             "order_facts.view.lkml")  # fmt: skip
    files = {n: d for n, d in project_files().items() if n in names}
    assert all(
        r["status"] == "completed" for r in (await ingest_files(lakehouse_app, "w", files)).values()
    )

    async def selected(filters: dict[str, Any]) -> set[tuple[str, str]]:
        request = QueryRequest("orders revenue", kb_names=("w",), top_k=50, filters=filters)
        pack = await lakehouse_app.retrieval.search(request)
        found = [p.metadata["fields"] for p in pack.passages]
        assert all(filters_hold(f, filters) for f in found), found
        return {(f["object_type"], f.get("model") or f["name"]) for f in found}

    # the semantic model and the LookML view are built on orders; their measures and dimensions
    # are selected through their relation (a measure's lineage is its view's)
    on_orders = await selected({"upstream": "orders"})
    assert {("semantic_model", "orders_semantic"), ("view", "order_facts")} <= on_orders
    assert ("measure", "order_facts") in on_orders and ("dimension", "orders_semantic") in on_orders
    assert not {m for _, m in on_orders} & {"customers_semantic", "orders", "customers"}
    # a metric is a lineage node under its own name: its upstream are its measures
    metrics = await selected({"upstream": "order_count", "object_type": "metric"})
    assert {m for _, m in metrics} == {"refund_rate", "order_count_metric"}
    # an explore named after its base view keeps that reference as written
    explores = await selected({"upstream": "order_facts", "object_type": "explore"})
    assert explores == {("explore", "order_facts")}


def filters_hold(fields: dict[str, Any], filters: dict[str, Any]) -> bool:
    return all(
        fields.get(k) == v or (isinstance(fields.get(k), list) and v in fields[k])
        for k, v in filters.items()
    )


def test_hostile_lineage_filter_values_are_refused(server: RunningServer) -> None:
    for bad in (
        {"upstream": {"gte": 1}},
        {"upstream": []},
        {"upstream": 7},
        {"upstream": ""},
        {"downstream": [["stg_orders"]]},
        {"downstream": None},
        {"upstream": "x" * 5000},
        {"upstream": [f"m{i}" for i in range(1001)]},
    ):
        response = search(server, bad)
        assert response.status_code == 400, (bad, response.text)
        assert next(iter(bad)) in response.json()["message"], response.text
    # an injection attempt is one (quoted) name that no relation has
    injected = search(server, {"upstream": 'stg_orders"]) or (1 == 1'})
    assert injected.status_code == 200 and injected.json()["sources"]["text"] == []


async def test_mcp_retrieve_takes_lineage_filters(server: RunningServer) -> None:
    async with Client(StreamableHttpTransport(server.url + "/mcp")) as client:
        result = await client.call_tool(
            "core_retrieve_text",
            {"query": "net amount", "kb_names": ["warehouse"], "top_k": 10,
             "filters": {"upstream": "stg_payments", "object_type": "column"}},
        )  # fmt: skip
    sources = result.structured_content["sources"]
    assert sources and all(
        s["metadata"]["model"] == "orders" and "stg_payments" in s["metadata"]["upstream"]
        for s in sources
    )


def context(namespace: str, registries: ComponentRegistries, data: Path) -> PluginContext:
    settings = load_settings({"EAGLE_DATA_DIR": str(data)})
    audit = PluginAudit(ring_cap=10)
    return PluginContext(namespace=namespace, settings=settings, audit=audit, registries=registries)


def test_a_plugin_cannot_redefine_cores_filters(tmp_path: Path) -> None:
    registries = ComponentRegistries()
    ctx = context("demo", registries, tmp_path)
    ctx.register_filter_field("object_type")
    ctx.register_filter_field("labels", "list")
    assert registries.filter_field_kinds() == {"object_type": "scalar", "labels": "list"}
    for name, kind in (("year", "scalar"), ("metadata", "scalar"), ("Bad-Name", "scalar")):
        with pytest.raises(ComponentError, match="filter field"):
            ctx.register_filter_field(name, kind)
    with pytest.raises(ComponentError, match="kind"):
        ctx.register_filter_field("owner", "range")
    with pytest.raises(ComponentError, match="already registered"):
        context("other", registries, tmp_path).register_filter_field("object_type")


def test_a_resolved_field_needs_its_resolver(tmp_path: Path) -> None:
    registries = ComponentRegistries()
    ctx = context("demo", registries, tmp_path)
    with pytest.raises(ComponentError, match="resolver"):
        ctx.register_filter_field("upstream", "resolved")
    with pytest.raises(ComponentError, match="resolver"):
        ctx.register_filter_field("owner", "scalar", resolve=lambda kbs, values: eq("a", 1))
    ctx.register_filter_field("upstream", "resolved", resolve=lambda kbs, values: eq("kb", kbs[0]))
    assert registries.filter_field_kinds() == {"upstream": "resolved"}
    # bound to the request's KBs; without a resolver a resolved field is refused, never dropped
    where = build_metadata_filter({"upstream": "x"}, {"upstream": "resolved"},
                                  registries.filter_resolver(["kb1"]))  # fmt: skip
    assert where.expression == '(kb == "kb1")'
    with pytest.raises(InvalidInputError, match="upstream"):
        build_metadata_filter({"upstream": "x"}, {"upstream": "resolved"})


async def test_the_fields_go_when_the_plugin_unloads(tmp_path: Path) -> None:
    app = await make_app(tmp_path)
    declared = app.registries.filter_field_kinds()
    assert declared["object_type"] == "scalar" and declared["tags"] == "list"
    assert declared["upstream"] == declared["downstream"] == "resolved"
    app.plugins.unload_all()
    assert app.registries.filter_field_kinds() == {}
    await app.stop()
