"""Lineage nodes: an object's kind and name, so same-named objects of different kinds stay apart.

A LookML view ``orders``, an explore ``orders``, a MetricFlow metric ``orders`` and the dbt model
``orders`` are four nodes: the view reads the table, the explore reads the view, and none of
them takes the others' lineage. A reference is resolved by what the referring object can read
(an explore reads views; a LookML view, a semantic model or a dbt model reads tables; a Cube
joins cubes or reads a table; a metric reads metrics or measures).
"""

from __future__ import annotations

from plugins.lakehouse_bi.model import (
    COLUMN,
    CUBE,
    DIMENSION,
    DOC,
    ENTITY,
    EXPLORE,
    EXPOSURE,
    MEASURE,
    METRIC,
    MODEL,
    RELATIONS,
    SEMANTIC_MODEL,
    SOURCE_TABLE,
    TABLE,
    VIEW,
)

Node = tuple[str, str]  # (kind, name)

# Node kinds. A "table" is what a warehouse holds: a dbt model or source, a DDL table or view.
TABLE_NODE = "table"
SEMANTIC_NODE = "semantic_model"
MEASURE_NODE = "measure"  # a MetricFlow measure a metric names
VIEW_NODE = "view"  # LookML
EXPLORE_NODE = "explore"
CUBE_NODE = "cube"  # a Cube cube or view

# What a reference of an object of this kind may name, in order of preference; the last one
# stands for a name no file defines.
_REFERS_TO: dict[str, tuple[str, ...]] = {
    EXPLORE_NODE: (VIEW_NODE,),
    CUBE_NODE: (CUBE_NODE, TABLE_NODE),
    METRIC: (METRIC, SEMANTIC_NODE, MEASURE_NODE),
}
_FRAMEWORK_NODES = {"lookml": VIEW_NODE, "cube": CUBE_NODE}
_NON_METRICFLOW = ("lookml", "cube")

# The chunks of a node of each kind: (object types selected by name, object types selected by
# their relation, source types, True if the chunk's source_type must be one of them / False if
# it must be none of them). A measure of a LookML view is not one of a semantic model.
CHUNKS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]] = {
    TABLE_NODE: ((MODEL, SOURCE_TABLE, TABLE), (COLUMN,), (), True),
    SEMANTIC_NODE: ((SEMANTIC_MODEL,), (MEASURE, DIMENSION, ENTITY), _NON_METRICFLOW, False),
    MEASURE_NODE: ((MEASURE,), (), _NON_METRICFLOW, False),
    VIEW_NODE: ((VIEW,), (MEASURE, DIMENSION), ("lookml",), True),
    EXPLORE_NODE: ((EXPLORE,), (), (), True),
    CUBE_NODE: ((CUBE, VIEW), (MEASURE, DIMENSION), ("cube",), True),
    METRIC: ((METRIC,), (), (), True),
    EXPOSURE: ((EXPOSURE,), (), (), True),
    DOC: ((DOC,), (), (), True),
}


def node_kind(object_type: str, framework: str) -> str:
    """The kind of node an object is, or (a column, measure, dimension) its relation is.
    ``framework`` is the object's framework or its chunk's ``source_type``."""
    if object_type in (MODEL, SOURCE_TABLE, TABLE, COLUMN):
        return TABLE_NODE
    if object_type == EXPLORE:
        return EXPLORE_NODE
    if framework in _FRAMEWORK_NODES:
        return _FRAMEWORK_NODES[framework]
    if object_type in (SEMANTIC_MODEL, MEASURE, DIMENSION, ENTITY):
        return SEMANTIC_NODE
    return object_type  # metric, exposure, doc


def relation_node(object_type: str, framework: str, name: str, model: str) -> Node:
    """The node whose lineage an object shows: its own, or its relation's (a column's)."""
    own = object_type in RELATIONS or object_type in (METRIC, EXPOSURE, DOC) or not model
    return node_kind(object_type, framework), name if own else model


def resolve(kind: str, name: str, defined: set[Node]) -> Node:
    """The node a reference ``name`` of a ``kind`` object names, among the ``defined`` ones."""
    choices = _REFERS_TO.get(kind, (TABLE_NODE,))
    for choice in choices:
        if (choice, name) in defined:
            return choice, name
    return choices[-1], name
