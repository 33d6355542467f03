"""Cube data models in YAML (``cubes:`` and ``views:``): cubes with their dimensions, measures
and joins. (Cube's JavaScript models are not read: they need a JS runtime to evaluate.)"""

from __future__ import annotations

import re
from typing import Any

from plugins.lakehouse_bi.model import (
    CUBE,
    DIMENSION,
    MEASURE,
    VIEW,
    FileCatalog,
    SemanticObject,
    clean,
)
from plugins.lakehouse_bi.parsers.common import named_items, table_relation

_MEMBER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def is_cube_yaml(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    cubes = named_items(value.get("cubes"))
    return bool(cubes) or (
        bool(named_items(value.get("views")))
        and all("cubes" in v or "includes" in v for v in named_items(value.get("views")))
    )


def read_cube_yaml(value: dict[str, Any]) -> FileCatalog:
    objects: list[SemanticObject] = []
    for cube in named_items(value.get("cubes")):
        objects.extend(_cube(cube))
    for view in named_items(value.get("views")):
        members = [
            clean(c.get("join_path")) for c in view.get("cubes") or [] if isinstance(c, dict)
        ]
        objects.append(
            SemanticObject(
                VIEW,
                clean(view["name"]),
                (clean(view["name"]),),
                "cube",
                description=clean(view.get("description")),
                upstream=tuple(m.split(".")[-1] for m in members if m),
            )
        )
    return FileCatalog("cube", tuple(objects))


def _cube(cube: dict[str, Any]) -> list[SemanticObject]:
    name = clean(cube["name"])
    table = clean(cube.get("sql_table"))
    joins = named_items(cube.get("joins"))
    upstream = [r for r in (table_relation(table),) if r]
    upstream += [clean(j["name"]) for j in joins]
    details = [("SQL table", table)] if table else []
    if cube.get("sql"):
        details.append(("SQL", clean(cube["sql"])[:400]))
    details += [
        (f"Join {clean(j['name'])}", f"{clean(j.get('relationship'))}; {clean(j.get('sql'))}")
        for j in joins
    ]
    primary = [
        clean(d["name"]) for d in named_items(cube.get("dimensions")) if d.get("primary_key")
    ]
    objects = [
        SemanticObject(
            CUBE,
            name,
            (name,),
            "cube",
            description=clean(cube.get("description") or cube.get("title")),
            grain=f"one row per {', '.join(primary)}" if primary else "",
            upstream=tuple(dict.fromkeys(upstream)),
            details=tuple(details),
        )
    ]
    for kind, key in ((DIMENSION, "dimensions"), (MEASURE, "measures")):
        for member in named_items(cube.get(key)):
            objects.append(
                SemanticObject(
                    kind,
                    clean(member["name"]),
                    (name, clean(member["name"])),
                    "cube",
                    description=clean(member.get("description") or member.get("title")),
                    model=name,
                    data_type=clean(member.get("type")),
                    expression=clean(member.get("sql")),
                    details=(("Primary key", "yes"),) if member.get("primary_key") else (),
                )
            )
    return objects
