"""The typed semantic-layer objects every lakehouse parser produces, and their wire form.

One :class:`SemanticObject` becomes one section (so one chunk) of the document: its ``path``
below the project (``("orders",)``, ``("orders", "net_amount")``) is the section path, and its
fields become the chunk's metadata that ``filters`` select on. The dict form travels in the
ParseResult's metadata and in the per-KB lineage index, so both are plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Object types a chunk's ``object_type`` takes (``filters: {"metadata": {"object_type": ...}}``).
MODEL = "model"
COLUMN = "column"
SOURCE_TABLE = "source_table"
METRIC = "metric"
MEASURE = "measure"
DIMENSION = "dimension"
ENTITY = "entity"
SEMANTIC_MODEL = "semantic_model"
EXPLORE = "explore"
VIEW = "view"
CUBE = "cube"
EXPOSURE = "exposure"
DOC = "doc"
TABLE = "table"  # SQL DDL: CREATE TABLE / VIEW
GROUP = "group"  # a heading that only groups objects ("metrics", "exposures")

# Types that stand for a relation other objects reference (lineage nodes).
RELATIONS = frozenset({MODEL, SOURCE_TABLE, SEMANTIC_MODEL, VIEW, CUBE, TABLE, EXPLORE})


@dataclass(frozen=True, slots=True)
class SemanticObject:
    """A model, column, metric, measure, dimension, source table, explore... of one file."""

    object_type: str
    name: str
    path: tuple[str, ...]
    framework: str
    description: str = ""
    model: str = ""  # the relation a child belongs to (a column's model, a measure's view)
    data_type: str = ""
    grain: str = ""
    expression: str = ""  # SQL expression, aggregation or metric definition
    tests: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()
    owner: str = ""
    tags: tuple[str, ...] = ()
    details: tuple[tuple[str, str], ...] = ()  # further "label: value" lines for the text

    def to_dict(self) -> dict[str, Any]:
        return {
            "object_type": self.object_type,
            "name": self.name,
            "path": list(self.path),
            "framework": self.framework,
            "description": self.description,
            "model": self.model,
            "data_type": self.data_type,
            "grain": self.grain,
            "expression": self.expression,
            "tests": list(self.tests),
            "upstream": list(self.upstream),
            "owner": self.owner,
            "tags": list(self.tags),
            "details": [list(d) for d in self.details],
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> SemanticObject:
        return cls(
            object_type=str(value["object_type"]),
            name=str(value["name"]),
            path=tuple(str(p) for p in value["path"]),
            framework=str(value.get("framework", "")),
            description=str(value.get("description", "")),
            model=str(value.get("model", "")),
            data_type=str(value.get("data_type", "")),
            grain=str(value.get("grain", "")),
            expression=str(value.get("expression", "")),
            tests=tuple(str(t) for t in value.get("tests", ())),
            upstream=tuple(str(u) for u in value.get("upstream", ())),
            owner=str(value.get("owner", "")),
            tags=tuple(str(t) for t in value.get("tags", ())),
            details=tuple((str(k), str(v)) for k, v in value.get("details", ())),
        )


@dataclass(frozen=True, slots=True)
class FileCatalog:
    """What one file defines: its objects in reading order, the kind of file, and notes
    (things skipped with a reason, e.g. a model that references itself)."""

    kind: str  # dbt_yaml, dbt_sql, dbt_manifest, metricflow, lookml, cube, ddl, yaml
    objects: tuple[SemanticObject, ...]
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


def clean(text: object) -> str:
    """One line of text from a YAML/JSON value (None and containers become '')."""
    if text is None or isinstance(text, dict | list):
        return ""
    return " ".join(str(text).split())


def as_list(value: object) -> list[Any]:
    """A YAML value that may be one item or a list of them."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]
