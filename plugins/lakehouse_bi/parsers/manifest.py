"""A compiled dbt ``manifest.json``: every model, seed, snapshot and source with its columns,
the tests attached to them, metrics, semantic models and exposures, with resolved lineage."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from plugins.lakehouse_bi.model import (
    COLUMN,
    EXPOSURE,
    METRIC,
    MODEL,
    SEMANTIC_MODEL,
    SOURCE_TABLE,
    FileCatalog,
    SemanticObject,
    as_list,
    clean,
)
from plugins.lakehouse_bi.parsers.common import mapping

RELATION_TYPES = ("model", "seed", "snapshot")


def is_manifest(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    metadata = mapping(value.get("metadata"))
    return "dbt_schema_version" in metadata and isinstance(value.get("nodes"), dict)


def read_manifest(value: dict[str, Any]) -> FileCatalog:
    nodes: dict[str, Any] = mapping(value.get("nodes"))
    sources: dict[str, Any] = mapping(value.get("sources"))
    names = {uid: _display(uid, node) for uid, node in {**nodes, **sources}.items()}
    names.update(
        {uid: clean(m.get("name")) for uid, m in mapping(value.get("semantic_models")).items()}
    )
    tests = _tests(nodes)
    objects: list[SemanticObject] = []
    for uid, node in nodes.items():
        if node.get("resource_type") in RELATION_TYPES:
            objects.extend(_relation(uid, node, MODEL, names, tests))
    for uid, node in sources.items():
        objects.extend(_relation(uid, node, SOURCE_TABLE, names, tests))
    for node in mapping(value.get("semantic_models")).values():
        name = clean(node.get("name"))
        objects.append(
            SemanticObject(
                SEMANTIC_MODEL,
                name,
                (name,),
                "metricflow",
                description=clean(node.get("description")),
                upstream=_upstream(node, names),
            )
        )
    for node in mapping(value.get("metrics")).values():
        name = clean(node.get("name"))
        params = mapping(node.get("type_params"))
        measure = clean(mapping(params.get("measure")).get("name"))
        objects.append(
            SemanticObject(
                METRIC,
                name,
                ("metrics", name),
                "metricflow",
                description=clean(node.get("description")),
                data_type=clean(node.get("type")),
                expression=f"{clean(node.get('type'))}: measure {measure}" if measure else "",
                upstream=(measure,) if measure else _upstream(node, names),
            )
        )
    for node in mapping(value.get("exposures")).values():
        name = clean(node.get("name"))
        objects.append(
            SemanticObject(
                EXPOSURE,
                name,
                ("exposures", name),
                "dbt",
                description=clean(node.get("description")),
                upstream=_upstream(node, names),
                owner=clean(mapping(node.get("owner")).get("name")),
            )
        )
    project = clean(mapping(value.get("metadata")).get("project_name"))
    return FileCatalog("dbt_manifest", tuple(objects), extra={"project_name": project})


def _display(uid: str, node: dict[str, Any]) -> str:
    if node.get("resource_type") == "source":
        return f"{clean(node.get('source_name'))}.{clean(node.get('name'))}"
    return clean(node.get("name")) or uid.rsplit(".", 1)[-1]


def _upstream(node: dict[str, Any], names: dict[str, str]) -> tuple[str, ...]:
    depends = mapping(node.get("depends_on")).get("nodes") or []
    return tuple(dict.fromkeys(names.get(str(d), str(d).rsplit(".", 1)[-1]) for d in depends))


def _tests(nodes: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """(attached node id, column or "") -> test names, from the manifest's test nodes."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for node in nodes.values():
        if node.get("resource_type") != "test":
            continue
        attached = clean(node.get("attached_node"))
        name = clean(mapping(node.get("test_metadata")).get("name")) or clean(node.get("name"))
        if attached:
            found[(attached, clean(node.get("column_name")))].append(name)
    return found


def _relation(
    uid: str,
    node: dict[str, Any],
    kind: str,
    names: dict[str, str],
    tests: dict[tuple[str, str], list[str]],
) -> list[SemanticObject]:
    name = names[uid]
    config = mapping(node.get("config"))
    meta = {**mapping(config.get("meta")), **mapping(node.get("meta"))}
    columns = [c for c in mapping(node.get("columns")).values() if isinstance(c, dict)]
    keys = [
        clean(c.get("name"))
        for c in columns
        if {"unique", "not_null"} <= set(tests.get((uid, clean(c.get("name"))), []))
    ]
    details = []
    if config.get("materialized"):
        details.append(("Materialized", clean(config["materialized"])))
    relation = clean(node.get("relation_name"))
    if relation:
        details.append(("Relation", relation))
    objects = [
        SemanticObject(
            kind,
            name,
            (name,),
            "dbt",
            description=clean(node.get("description")),
            grain=clean(meta.get("grain")) or (f"one row per {', '.join(keys)}" if keys else ""),
            tests=tuple(tests.get((uid, ""), ())),
            upstream=_upstream(node, names),
            owner=clean(
                mapping(meta.get("owner")).get("name")
                if isinstance(meta.get("owner"), dict)
                else meta.get("owner")
            ),
            tags=tuple(clean(t) for t in as_list(node.get("tags"))),
            details=tuple(details),
        )
    ]
    for column in columns:
        column_name = clean(column.get("name"))
        if not column_name:
            continue
        objects.append(
            SemanticObject(
                COLUMN,
                column_name,
                (name, column_name),
                "dbt",
                description=clean(column.get("description")),
                model=name,
                data_type=clean(column.get("data_type")),
                tests=tuple(tests.get((uid, column_name), ())),
                tags=tuple(clean(t) for t in as_list(column.get("tags"))),
            )
        )
    return objects
