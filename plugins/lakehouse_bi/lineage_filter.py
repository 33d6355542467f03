"""The ``upstream`` / ``downstream`` filters: lineage across files, resolved at query time.

A chunk stores only its own file's references (a ``schema.yml`` model does not know the
``ref()`` calls of its ``.sql``, a source does not know the models built on it), and a hit's
lineage is laid over it from the KB's lineage index when it is returned. A filter must select
what the hits show, so ``{"upstream": "stg_orders"}`` is resolved against the same index: the
relations whose direct upstream holds ``stg_orders`` (``stg_orders``'s direct downstream in the
graph, from every node of that name), then every typed chunk of those nodes: the node's own
chunks by name, its columns, measures and dimensions by model, each of the node's kind (a
LookML view ``orders`` selects the view and its fields, not the dbt model or the explore
``orders``). Chunks whose stored list names the value as written match too. Values are names,
compared exactly, and resolve within each project of each KB (a :data:`Scope`): KB B's
``fct_orders`` built on ``legacy_eu_orders`` does not make KB A's ``fct_orders`` match.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

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
from plugins.lakehouse_bi.nodes import CHUNKS, Node

UPSTREAM = "upstream"
DOWNSTREAM = "downstream"


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
) -> dict[Scope, list[Node]]:
    """The nodes each scope's graph puts in the filter (scopes with none left out)."""
    found = {}
    for scope, graph in sorted(lineage.graphs.items()):
        # "upstream holds X" is "is one of X's downstream", and the other way round
        edges = graph.downstream if direction == UPSTREAM else graph.upstream
        nodes = sorted({r for name in names for n in graph.nodes(name) for r in edges.get(n, ())})
        if nodes:
            found[scope] = nodes
    return found


def _in_scope(scope: Scope, nodes: list[Node]) -> Filter:
    kb_name, project = scope
    by_kind: dict[str, list[str]] = defaultdict(list)
    for kind, name in nodes:
        by_kind[kind].append(name)
    return all_of(
        eq("kb_name", kb_name),
        json_eq("metadata", "project", project),
        any_of(*(_chunks_of(kind, names) for kind, names in sorted(by_kind.items()))),
    )


def _chunks_of(kind: str, names: list[str]) -> Filter:
    """The chunks of these nodes of one kind: their own, and their columns, measures,
    dimensions (whose lineage is their relation's), told apart from same-named objects of
    other kinds by object type and source type."""
    by_name, by_relation, sources, allowed = CHUNKS.get(kind, ((kind,), (), (), True))
    source = json_in("metadata", "source_type", sources) if sources else None
    return all_of(
        any_of(
            _typed(by_name, "name", names),
            _typed(by_relation, "model", names),
        ),
        (source if allowed else not_(source)) if source is not None else None,
    )


def _typed(object_types: tuple[str, ...], key: str, names: list[str]) -> Filter | None:
    if not object_types:
        return None
    return all_of(json_in("metadata", "object_type", object_types), json_in("metadata", key, names))


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
