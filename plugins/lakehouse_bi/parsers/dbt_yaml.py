"""dbt property files (``schema.yml``, ``_models.yml``): models, columns, tests, sources,
exposures, plus MetricFlow semantic models and metrics, which live in the same YAML files."""

from __future__ import annotations

from typing import Any

from plugins.lakehouse_bi.model import (
    COLUMN,
    DIMENSION,
    ENTITY,
    EXPOSURE,
    MEASURE,
    METRIC,
    MODEL,
    SEMANTIC_MODEL,
    SOURCE_TABLE,
    FileCatalog,
    SemanticObject,
    as_list,
    clean,
)
from plugins.lakehouse_bi.parsers.common import (
    mapping,
    meta_value,
    named_items,
    refs_in,
    tags_of,
    test_names,
)

DBT_KEYS = frozenset(
    {"models", "sources", "exposures", "seeds", "snapshots", "semantic_models", "metrics"}
)


def is_dbt_yaml(value: object) -> bool:
    return isinstance(value, dict) and bool(DBT_KEYS & set(value))


def read_dbt_yaml(value: dict[str, Any]) -> FileCatalog:
    objects: list[SemanticObject] = []
    for node in named_items(value.get("models")) + named_items(value.get("seeds")):
        objects.extend(_model(node))
    for node in named_items(value.get("snapshots")):
        objects.extend(_model(node))
    for source in named_items(value.get("sources")):
        objects.extend(_source(source))
    for node in named_items(value.get("semantic_models")):
        objects.extend(_semantic_model(node))
    metrics = named_items(value.get("metrics"))
    objects.extend(_metric(m) for m in metrics)
    exposures = named_items(value.get("exposures"))
    objects.extend(_exposure(e) for e in exposures)
    kind = "metricflow" if value.get("semantic_models") or metrics else "dbt_yaml"
    return FileCatalog(kind, tuple(objects))


def _grain(columns: list[dict[str, Any]], node: dict[str, Any]) -> str:
    """``meta.grain``, else the column(s) tested unique or declared primary key."""
    declared = meta_value(node, "grain")
    if declared:
        return declared
    for test in as_list(node.get("tests")) + as_list(node.get("data_tests")):
        combo = mapping(test).get("dbt_utils.unique_combination_of_columns")
        if isinstance(combo, dict):
            return "one row per " + ", ".join(
                clean(c) for c in as_list(combo.get("combination_of_columns"))
            )
    keys = [clean(c["name"]) for c in columns if _is_key(c)]
    return f"one row per {', '.join(keys)}" if keys else ""


def _is_key(column: dict[str, Any]) -> bool:
    tests = set(test_names(column.get("tests")) + test_names(column.get("data_tests")))
    constraints = {clean(mapping(c).get("type")) for c in as_list(column.get("constraints"))}
    return "primary_key" in constraints or {"unique", "not_null"} <= tests


def _model(node: dict[str, Any]) -> list[SemanticObject]:
    name = clean(node["name"])
    columns = named_items(node.get("columns"))
    config = mapping(node.get("config"))
    details: list[tuple[str, str]] = []
    if config.get("materialized"):
        details.append(("Materialized", clean(config["materialized"])))
    model = SemanticObject(
        MODEL,
        name,
        (name,),
        "dbt",
        description=clean(node.get("description")),
        grain=_grain(columns, node),
        tests=test_names(node.get("tests")) + test_names(node.get("data_tests")),
        owner=meta_value(node, "owner") or clean(mapping(config.get("meta")).get("owner")),
        tags=tags_of(node),
        details=tuple(details),
        upstream=_depends_on(node),
    )
    return [model, *(_column(c, name, (name,), "dbt") for c in columns)]


def _depends_on(node: dict[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    for item in as_list(node.get("depends_on")):
        found.extend(refs_in(str(item)))
    return tuple(found)


def _column(
    node: dict[str, Any], model: str, parent: tuple[str, ...], framework: str
) -> SemanticObject:
    name = clean(node["name"])
    tests = test_names(node.get("tests")) + test_names(node.get("data_tests"))
    constraints = tuple(
        clean(mapping(c).get("type")) for c in as_list(node.get("constraints")) if mapping(c)
    )
    return SemanticObject(
        COLUMN,
        name,
        (*parent, name),
        framework,
        description=clean(node.get("description")),
        model=model,
        data_type=clean(node.get("data_type") or node.get("type")),
        tests=tests + tuple(c for c in constraints if c),
        tags=tags_of(node),
        owner=meta_value(node, "owner"),
    )


def _source(source: dict[str, Any]) -> list[SemanticObject]:
    objects: list[SemanticObject] = []
    source_name = clean(source["name"])
    schema = clean(source.get("schema")) or source_name
    database = clean(source.get("database"))
    for table in named_items(source.get("tables")):
        name = f"{source_name}.{clean(table['name'])}"
        relation = ".".join(
            p for p in (database, schema, clean(table.get("identifier") or table["name"])) if p
        )
        columns = named_items(table.get("columns"))
        # The warehouse relation when it is not the name the chunk already starts with.
        details = [("Relation", relation)] if relation != name else []
        if table.get("loaded_at_field"):
            details.append(("Loaded at", clean(table["loaded_at_field"])))
        objects.append(
            SemanticObject(
                SOURCE_TABLE,
                name,
                (name,),
                "dbt",
                description=clean(table.get("description")) or clean(source.get("description")),
                grain=_grain(columns, table),
                tests=test_names(table.get("tests")) + test_names(table.get("data_tests")),
                owner=meta_value(table, "owner") or meta_value(source, "owner"),
                tags=tuple(dict.fromkeys(tags_of(source) + tags_of(table))),
                details=tuple(details),
            )
        )
        objects.extend(_column(c, name, (name,), "dbt") for c in columns)
    return objects


def _semantic_model(node: dict[str, Any]) -> list[SemanticObject]:
    name = clean(node["name"])
    upstream = refs_in(str(node.get("model", "")))
    defaults = mapping(node.get("defaults"))
    entities = named_items(node.get("entities"))
    primary = [clean(e["name"]) for e in entities if clean(e.get("type")) == "primary"]
    details = []
    if defaults.get("agg_time_dimension"):
        details.append(("Default time dimension", clean(defaults["agg_time_dimension"])))
    objects = [
        SemanticObject(
            SEMANTIC_MODEL,
            name,
            (name,),
            "metricflow",
            description=clean(node.get("description")),
            grain=f"one row per {', '.join(primary)}" if primary else "",
            upstream=upstream,
            owner=meta_value(node, "owner"),
            tags=tags_of(node),
            details=tuple(details),
        )
    ]
    for entity in entities:
        objects.append(_member(ENTITY, entity, name, type_key="type"))
    for dimension in named_items(node.get("dimensions")):
        objects.append(_member(DIMENSION, dimension, name, type_key="type"))
    for measure in named_items(node.get("measures")):
        objects.append(_member(MEASURE, measure, name, type_key="agg"))
    return objects


def _member(kind: str, node: dict[str, Any], parent: str, *, type_key: str) -> SemanticObject:
    name = clean(node["name"])
    params = mapping(node.get("type_params"))
    details = []
    if params.get("time_granularity"):
        details.append(("Time granularity", clean(params["time_granularity"])))
    if node.get("agg_time_dimension"):
        details.append(("Time dimension", clean(node["agg_time_dimension"])))
    expression = clean(node.get("expr"))
    if kind == MEASURE:
        expression = f"{clean(node.get('agg'))}({expression or name})"
    return SemanticObject(
        kind,
        name,
        (parent, name),
        "metricflow",
        description=clean(node.get("description") or node.get("label")),
        model=parent,
        data_type=clean(node.get(type_key)),
        expression=expression,
        details=tuple(details),
    )


def _metric(node: dict[str, Any]) -> SemanticObject:
    name = clean(node["name"])
    params = mapping(node.get("type_params"))
    kind = clean(node.get("type")) or "simple"
    parts: list[str] = []
    measures: list[str] = []
    for key in ("measure", "numerator", "denominator"):
        value = params.get(key)
        if value:
            measure = clean(mapping(value).get("name")) if isinstance(value, dict) else clean(value)
            measures.append(measure)
            parts.append(f"{key} {measure}")
    if params.get("expr"):
        parts.append(f"expr {clean(params['expr'])}")
    parts += _cumulative(params)
    metrics = as_list(params.get("metrics"))
    referenced = [clean(mapping(m).get("name") or m) for m in metrics]
    if referenced:
        parts.append("of metrics " + ", ".join(_metric_input(m) for m in metrics))
    details = [("Label", clean(node["label"]))] if node.get("label") else []
    if node.get("filter"):
        details.append(("Filter", clean(node["filter"])))
    return SemanticObject(
        METRIC,
        name,
        ("metrics", name),
        "metricflow",
        description=clean(node.get("description")),
        data_type=kind,
        expression=f"{kind}: " + "; ".join(parts) if parts else kind,
        upstream=tuple(dict.fromkeys(measures + referenced)),
        owner=meta_value(node, "owner"),
        tags=tags_of(node),
        details=tuple(details),
    )


def _cumulative(params: dict[str, Any]) -> list[str]:
    """A cumulative metric's window or grain to date (``type_params`` or, in newer MetricFlow,
    ``cumulative_type_params``), in MetricFlow's words: "revenue over 7 days" is not "revenue"."""
    found = []
    for where in (params, mapping(params.get("cumulative_type_params"))):
        for key in ("window", "grain_to_date", "period_agg"):
            if where.get(key):
                found.append(f"{key} {_interval(where[key])}")
    return found


def _interval(value: object) -> str:
    """``7 days`` as written, or a manifest's ``{count: 7, granularity: day}``."""
    if isinstance(value, dict):
        return " ".join(clean(value.get(k)) for k in ("count", "granularity") if value.get(k))
    return clean(value)


def _metric_input(value: object) -> str:
    """One input of a derived metric, with what changes its value: ``revenue (offset_window
    1 month) as revenue_prev`` (the expression names the alias, not the metric)."""
    node = mapping(value)
    name = clean(node.get("name") or value)
    changes = [
        f"{key} {_interval(node[key])}"
        for key in ("offset_window", "offset_to_grain", "filter")
        if _interval(node.get(key))
    ]
    text = f"{name} ({'; '.join(changes)})" if changes else name
    return f"{text} as {clean(node['alias'])}" if node.get("alias") else text


def _exposure(node: dict[str, Any]) -> SemanticObject:
    name = clean(node["name"])
    owner = mapping(node.get("owner"))
    details = [("Type", clean(node.get("type")))]
    if node.get("url"):
        details.append(("URL", clean(node["url"])))
    return SemanticObject(
        EXPOSURE,
        name,
        ("exposures", name),
        "dbt",
        description=clean(node.get("description")),
        upstream=_depends_on(node),
        owner=clean(owner.get("name") or owner.get("email")),
        tags=tags_of(node),
        details=tuple(details),
    )
