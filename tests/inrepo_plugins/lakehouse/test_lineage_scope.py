"""Lineage resolves within one project of one knowledge base, from completed documents only."""

from __future__ import annotations

from typing import Any

from eagle_rag.bootstrap import EagleApp
from eagle_rag.plugins.payloads import QueryRequest
from tests.inrepo_plugins.lakehouse.conftest import ingest_files
from tests.inrepo_plugins.lakehouse.test_app import semantic_tool


def sql(upstream: str) -> bytes:
    return f"select * from {{{{ ref('{upstream}') }}}}".encode()


async def upstream_by_scope(
    app: EagleApp, kbs: tuple[str, ...], filters: dict[str, Any] | None = None
) -> dict[tuple[str, str], list[str]]:
    """{(kb, project): upstream} of the fct_orders models a search returns."""
    request = QueryRequest("fct_orders", kb_names=kbs, top_k=20, filters=filters or {})
    pack = await app.retrieval.search(request)
    return {
        (p.kb_name, p.metadata["fields"]["project"]): p.metadata["fields"].get("upstream", [])
        for p in pack.passages
        if p.metadata["fields"].get("name") == "fct_orders"
    }


async def test_same_named_models_of_two_kbs_keep_their_own_lineage(
    lakehouse_app: EagleApp,
) -> None:
    await ingest_files(lakehouse_app, "kb_a", {"fct_orders.sql": sql("stg_orders")})
    await ingest_files(lakehouse_app, "kb_b", {"fct_orders.sql": sql("legacy_eu_orders")})
    both = ("kb_a", "kb_b")
    assert await upstream_by_scope(lakehouse_app, both) == {
        ("kb_a", "kb_a"): ["stg_orders"],
        ("kb_b", "kb_b"): ["legacy_eu_orders"],
    }
    selected = await upstream_by_scope(lakehouse_app, both, {"upstream": "legacy_eu_orders"})
    assert selected == {("kb_b", "kb_b"): ["legacy_eu_orders"]}

    tool = semantic_tool(lakehouse_app, "lakehouse_bi_query_semantic_context")
    pack = await tool("fct_orders", kb_names=list(both), top_k=2)
    lineage = {o["source"]["kb_name"]: o["lineage"]["upstream"] for o in pack["objects"]}
    assert lineage == {"kb_a": ["stg_orders"], "kb_b": ["legacy_eu_orders"]}


async def test_two_projects_of_one_kb_keep_their_own_lineage(lakehouse_app: EagleApp) -> None:
    for project, upstream in (("proj_a", "stg_orders"), ("proj_b", "legacy_eu_orders")):
        files = {f"{project}/models/fct_orders.sql": sql(upstream)}
        await ingest_files(lakehouse_app, "two", files, metadata={"project": project})
    assert await upstream_by_scope(lakehouse_app, ("two",)) == {
        ("two", "proj_a"): ["stg_orders"],
        ("two", "proj_b"): ["legacy_eu_orders"],
    }
    selected = await upstream_by_scope(lakehouse_app, ("two",), {"downstream": "stg_orders"})
    assert selected == {}  # nothing of either project is upstream of stg_orders
    selected = await upstream_by_scope(lakehouse_app, ("two",), {"upstream": "stg_orders"})
    assert selected == {("two", "proj_a"): ["stg_orders"]}


async def test_a_failed_documents_lineage_does_not_count(lakehouse_app: EagleApp) -> None:
    ghost = b"""version: 2
semantic_models:
  - name: ghost_sm
    model: ref('fct_orders')
    entities: [{name: order, type: primary, expr: order_id}]
"""
    files = {"fct_orders.sql": sql("stg_orders"), "ghost.yml": ghost}
    outcome = await ingest_files(lakehouse_app, "kb", files)

    async def fct_orders(filters: dict[str, Any]) -> list[dict[str, Any]]:
        request = QueryRequest("fct_orders", kb_names=("kb",), top_k=20, filters=filters)
        pack = await lakehouse_app.retrieval.search(request)
        return [p.metadata["fields"] for p in pack.passages]

    [model] = await fct_orders({"object_type": "model"})
    assert model["downstream"] == ["ghost_sm"]
    # What a cancel (or a failure after PARSE) leaves: the document failed, its rows removed,
    # its lineage entry still stored beside its original.
    ghost_id = outcome["ghost.yml"]["id"]
    lakehouse_app.repositories.documents.set_fields(ghost_id, status="failed", error="cancelled")
    lakehouse_app.vectors.delete_documents([ghost_id])
    await lakehouse_app.flush_vectors()
    [model] = await fct_orders({"object_type": "model"})
    assert "downstream" not in model
    assert await fct_orders({"downstream": "ghost_sm"}) == []
