"""The ``upstream`` / ``downstream`` filters: lineage across files, resolved at query time.

A chunk stores only its own file's references (a ``schema.yml`` model does not know the
``ref()`` calls of its ``.sql``, a source does not know the models built on it), and a hit's
lineage is laid over it from the KB's lineage index when it is returned. A filter must select
what the hits show, so ``{"upstream": "stg_orders"}`` is resolved against the same index: the
relations whose direct upstream holds ``stg_orders`` (``stg_orders``'s direct downstream in the
graph), then every typed chunk of those relations: the relation's own chunks by name, its
columns, measures and dimensions by model. Chunks whose stored list names the value as written
(an explore named after its base view) match too. Values are names, compared exactly, and
resolve within each project of each KB (a :data:`Scope`): KB B's ``fct_orders`` built on
``legacy_eu_orders`` does not make KB A's ``fct_orders`` match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from eagle_rag.errors import InvalidInputError
from eagle_rag.index.filters import (
    MAX_LIST,
    MAX_STRING,
    Filter,
    Scalar,
    all_of,
    any_of,
    eq,
    json_contains_any,
    json_eq,
    json_in,
    not_,
)
from plugins.lakehouse_bi.lineage import LineageIndex, Scope, ScopedLineage
from plugins.lakehouse_bi.model import DOC, EXPOSURE, GROUP, METRIC, RELATIONS

UPSTREAM = "upstream"
DOWNSTREAM = "downstream"
# Objects that are lineage nodes under their own name although they are no relation: their
# lineage is their own (a metric's semantic model), not a model's.
_TOP_LEVEL = frozenset({METRIC, EXPOSURE, DOC})
_NOT_OBJECTS = ("summary", GROUP)  # headings, not objects: hits show no lineage for them


def lineage_resolver(
    index: LineageIndex, direction: str
) -> Callable[[tuple[str, ...], tuple[Scalar, ...]], Filter]:
    """The resolver of the ``upstream`` or ``downstream`` filter over ``index``."""

    def resolve(kb_names: tuple[str, ...], values: tuple[Scalar, ...]) -> Filter:
        names = _names(direction, values)
        return lineage_condition(direction, names, index.graph(kb_names))

    return resolve


def lineage_condition(direction: str, names: tuple[str, ...], lineage: ScopedLineage) -> Filter:
    """Typed chunks whose direct ``direction`` list (as hits show it) holds any of ``names``."""
    selected = _selected(direction, names, lineage)
    total = sum(len(relations) for relations in selected.values())
    if total > MAX_LIST:
        raise InvalidInputError(
            f"filter {direction!r} selects {total} relations, more than {MAX_LIST}; "
            "narrow it with object_type or model",
            filter=direction,
        )
    as_written = json_contains_any("metadata", direction, names)
    if not selected:
        return as_written
    return any_of(as_written, *(_in_scope(scope, rels) for scope, rels in selected.items()))


def _selected(
    direction: str, names: tuple[str, ...], lineage: ScopedLineage
) -> dict[Scope, list[str]]:
    """The relations each scope's graph puts in the filter (scopes with none left out)."""
    found = {}
    for scope, graph in sorted(lineage.graphs.items()):
        # "upstream holds X" is "is one of X's downstream", and the other way round
        edges = graph.downstream if direction == UPSTREAM else graph.upstream
        relations = sorted({r for name in names for r in edges.get(name, ()) if r != name})
        if relations:
            found[scope] = relations
    return found


def _in_scope(scope: Scope, relations: list[str]) -> Filter:
    kb_name, project = scope
    return all_of(
        eq("kb_name", kb_name),
        json_eq("metadata", "project", project),
        any_of(_relation_chunks(relations), _child_chunks(relations)),
    )


def _relation_chunks(relations: Iterable[str]) -> Filter:
    return all_of(
        json_in("metadata", "object_type", sorted(RELATIONS | _TOP_LEVEL)),
        json_in("metadata", "name", relations),
    )


def _child_chunks(relations: Iterable[str]) -> Filter:
    """Columns, measures, dimensions... of the relations: their lineage is their model's."""
    return all_of(
        not_(json_in("metadata", "object_type", sorted({*RELATIONS, *_TOP_LEVEL, *_NOT_OBJECTS}))),
        json_in("metadata", "model", relations),
    )


def _names(direction: str, values: tuple[Scalar, ...]) -> tuple[str, ...]:
    names = []
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputError(
                f"filter {direction!r} takes relation names (non-empty strings)", filter=direction
            )
        if len(value) > MAX_STRING:
            raise InvalidInputError(
                f"filter {direction!r} names are at most {MAX_STRING} characters",
                filter=direction,
            )
        names.append(value.strip())
    return tuple(dict.fromkeys(names))
