"""LookML (``.lkml``): views with their dimensions, dimension groups and measures, and explores
with their joins. The ``lkml`` package parses; its SyntaxError becomes a per-file error."""

from __future__ import annotations

from typing import Any

from eagle_rag.errors import InvalidInputError
from plugins.lakehouse_bi.model import (
    DIMENSION,
    EXPLORE,
    MEASURE,
    VIEW,
    FileCatalog,
    SemanticObject,
    as_list,
    clean,
)
from plugins.lakehouse_bi.parsers.common import named_items, table_relation


def read_lookml(text: str, filename: str) -> FileCatalog:
    try:
        import lkml
    except ImportError as exc:  # the extra is not installed: say how to get it
        raise InvalidInputError(
            "LookML needs the lkml package: pip install 'eagle-rag[lakehouse-bi]'",
            filename=filename,
        ) from exc
    try:
        value = lkml.load(text)
    except SyntaxError as exc:
        raise InvalidInputError(f"LookML syntax error: {exc}", filename=filename) from exc
    if not isinstance(value, dict):
        raise InvalidInputError("the LookML file is empty", filename=filename)
    objects: list[SemanticObject] = []
    for view in named_items(value.get("views")):
        objects.extend(_view(view))
    for explore in named_items(value.get("explores")):
        objects.append(_explore(explore))
    if not objects:
        raise InvalidInputError("the LookML file defines no view or explore", filename=filename)
    return FileCatalog("lookml", tuple(objects))


def _refined(node: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The name a view or explore defines, and a detail saying so when it refines one:
    ``view: +orders`` adds its fields to ``orders`` (LookML refinements), it is no new view."""
    name = clean(node["name"])
    if name.startswith("+") and name[1:].strip():
        name = name[1:].strip()
        return name, [("Refines", name)]
    return name, []


def _view(view: dict[str, Any]) -> list[SemanticObject]:
    name, details = _refined(view)
    table = clean(view.get("sql_table_name"))
    relation = table_relation(table)
    upstream = (relation,) if relation else ()
    details += [("SQL table", table)] if table else []
    if view.get("derived_table"):
        sql = (
            clean(view["derived_table"].get("sql"))
            if isinstance(view["derived_table"], dict)
            else ""
        )
        details.append(("Derived table", sql[:400]))
    if view.get("extends"):
        details.append(("Extends", ", ".join(clean(e) for e in as_list(view["extends"]))))
    primary = [clean(d["name"]) for d in named_items(view.get("dimensions")) if view_key(d)]
    objects = [
        SemanticObject(
            VIEW,
            name,
            (name,),
            "lookml",
            description=clean(view.get("description") or view.get("label")),
            grain=f"one row per {', '.join(primary)}" if primary else "",
            upstream=upstream,
            tags=tuple(clean(t) for t in as_list(view.get("tags"))),
            details=tuple(details),
        )
    ]
    for dimension in named_items(view.get("dimensions")):
        objects.append(_field(DIMENSION, dimension, name))
    for group in named_items(view.get("dimension_groups")):
        objects.append(_field(DIMENSION, group, name, group=True))
    for measure in named_items(view.get("measures")):
        objects.append(_field(MEASURE, measure, name))
    return objects


def view_key(dimension: dict[str, Any]) -> bool:
    return clean(dimension.get("primary_key")).lower() == "yes"


def _field(kind: str, node: dict[str, Any], view: str, *, group: bool = False) -> SemanticObject:
    name = clean(node["name"])
    details: list[tuple[str, str]] = []
    if node.get("label"):
        details.append(("Label", clean(node["label"])))
    if group and node.get("timeframes"):
        details.append(("Timeframes", ", ".join(clean(t) for t in as_list(node["timeframes"]))))
    if view_key(node):
        details.append(("Primary key", "yes"))
    if node.get("filters"):
        details.append(("Filters", clean(str(node["filters"]))))
    return SemanticObject(
        kind,
        name,
        (view, name),
        "lookml",
        description=clean(node.get("description")),
        model=view,
        data_type=clean(node.get("type")),
        expression=clean(node.get("sql")),
        tags=tuple(clean(t) for t in as_list(node.get("tags"))),
        details=tuple(details),
    )


def _explore(node: dict[str, Any]) -> SemanticObject:
    name, refines = _refined(node)
    base = clean(node.get("from") or node.get("view_name")) or name
    joins = named_items(node.get("joins"))
    details = refines + [
        (
            f"Join {clean(j['name'])}",
            "; ".join(
                x
                for x in (
                    clean(j.get("relationship")),
                    clean(j.get("sql_on")),
                    clean(j.get("type")),
                )
                if x
            ),
        )
        for j in joins
    ]
    return SemanticObject(
        EXPLORE,
        name,
        ("explores", name),
        "lookml",
        description=clean(node.get("description") or node.get("label")),
        upstream=tuple(dict.fromkeys([base, *(clean(j.get("from") or j["name"]) for j in joins)])),
        tags=tuple(clean(t) for t in as_list(node.get("tags"))),
        details=tuple(details),
    )
