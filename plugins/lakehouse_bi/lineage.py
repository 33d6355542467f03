"""The per-KB lineage index: what every ingested file defines and references, merged.

Each document's entry is one small JSON object stored next to its original
(``{namespace}/{kb}/{document_id}/lakehouse-lineage.json``): deleting the document or the KB
deletes it with the rest, and a re-ingested file (a new document id, the old one removed)
replaces it. Readers merge the entries of completed documents (one cancelled or failed after
its PARSE wrote the entry is no evidence), so the graph does not depend on the order files were
ingested in. Names resolve within one project of one KB (a :data:`Scope`): a ``ref()`` in
KB A's project never reaches a same-named model of KB B, or of another project.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.errors import NotFoundError
from eagle_rag.storage.keys import object_key, validate_prefix
from plugins.lakehouse_bi.model import MEASURE, RELATIONS, SemanticObject
from plugins.lakehouse_bi.nodes import (
    MEASURE_NODE,
    SEMANTIC_NODE,
    Node,
    relation_node,
    resolve,
)

ENTRY_NAME = "lakehouse-lineage.json"
CACHE_LIMIT = 20_000
MAX_DEPTH = 10
# Lineage names resolve within one project of one knowledge base: (kb_name, project).
Scope = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Entry:
    """One document's contribution to the index."""

    document_id: str
    filename: str
    project: str
    kind: str
    objects: tuple[SemanticObject, ...]


@dataclass(slots=True)
class LineageGraph:
    """Relations (models, sources, views, metrics...) as :data:`Node` s, with their edges both
    ways. References are resolved once every entry is in (:func:`resolve` needs to know which
    nodes exist), so the graph does not depend on the order entries are added in."""

    objects: dict[Node, list[tuple[SemanticObject, Entry]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    children: dict[Node, list[tuple[SemanticObject, Entry]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # (referring node, the name it references): resolved into edges on first read
    _references: list[tuple[Node, str]] = field(default_factory=list)
    # MetricFlow measure name -> the semantic models defining it
    _measures: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _edges: tuple[dict[Node, set[Node]], dict[Node, set[Node]]] | None = None
    _named: dict[str, set[Node]] | None = None

    def add(self, entry: Entry) -> None:
        for obj in entry.objects:
            node = relation_node(obj.object_type, obj.framework, obj.name, obj.model)
            if obj.object_type in RELATIONS or not obj.model:
                self.objects[node].append((obj, entry))
            else:
                self.children[node].append((obj, entry))
            if obj.object_type == MEASURE and obj.framework == "metricflow":
                self._measures[obj.name].add(obj.model)
            self._references += [(node, parent) for parent in obj.upstream]
        self._edges = self._named = None

    @property
    def upstream(self) -> dict[Node, set[Node]]:
        return self._resolved()[0]

    @property
    def downstream(self) -> dict[Node, set[Node]]:
        return self._resolved()[1]

    def nodes(self, name: str) -> list[Node]:
        """Every node of this name (a view, an explore and a table may share one)."""
        if self._named is None:
            named: dict[str, set[Node]] = defaultdict(set)
            for node in (*self.objects, *self.upstream, *self.downstream):
                named[node[1]].add(node)
            self._named = named
        return sorted(self._named.get(name, ()))

    def _resolved(self) -> tuple[dict[Node, set[Node]], dict[Node, set[Node]]]:
        if self._edges is None:
            upstream: dict[Node, set[Node]] = defaultdict(set)
            downstream: dict[Node, set[Node]] = defaultdict(set)
            defined = set(self.objects) | {(MEASURE_NODE, m) for m in self._measures}
            for node, name in self._references:
                parents = [resolve(node[0], name, defined)]
                if parents[0][0] == MEASURE_NODE:  # a metric reads its measure's models too
                    parents += [(SEMANTIC_NODE, m) for m in sorted(self._measures.get(name, ()))]
                for parent in parents:
                    if parent != node:
                        upstream[node].add(parent)
                        downstream[parent].add(node)
            self._edges = upstream, downstream
        return self._edges

    def walk(self, start: Node, direction: str, depth: int = MAX_DEPTH) -> list[str]:
        """Names reachable upstream or downstream, nearest first; cycles are walked once."""
        edges = self.upstream if direction == "upstream" else self.downstream
        seen: dict[Node, None] = {}
        frontier = [start]
        for _ in range(depth):
            following = []
            for node in frontier:
                for neighbour in sorted(edges.get(node, ()), key=_by_name):
                    if neighbour != start and neighbour not in seen:
                        seen[neighbour] = None
                        following.append(neighbour)
            if not following:
                break
            frontier = following
        return list(dict.fromkeys(name for _, name in seen))

    def cycle_through(self, start: Node) -> list[str]:
        """A reference cycle that passes through ``start`` (empty if none): a -> b -> a."""
        path: list[Node] = []
        visiting: set[Node] = set()

        def visit(node: Node) -> bool:
            for parent in sorted(self.upstream.get(node, ()), key=_by_name):
                if parent == start:
                    path.append(parent)
                    return True
                if parent in visiting or len(path) > MAX_DEPTH * 10:
                    continue
                visiting.add(parent)
                path.append(parent)
                if visit(parent):
                    return True
                path.pop()
            return False

        return [start[1], *(n for _, n in path)] if visit(start) else []

    def direct(self, node: Node, direction: str) -> list[str]:
        """The names of the node's direct upstream or downstream."""
        edges = self.upstream if direction == "upstream" else self.downstream
        return sorted({name for _, name in edges.get(node, ())})

    def lineage(self, node: Node) -> dict[str, Any]:
        return {
            "upstream": self.direct(node, "upstream"),
            "downstream": self.direct(node, "downstream"),
            "all_upstream": self.walk(node, "upstream"),
            "all_downstream": self.walk(node, "downstream"),
            "cycle": self.cycle_through(node),
        }


@dataclass(slots=True)
class ScopedLineage:
    """One :class:`LineageGraph` per project of each knowledge base read."""

    graphs: dict[Scope, LineageGraph] = field(default_factory=dict)

    def add(self, kb_name: str, entry: Entry) -> None:
        self.graphs.setdefault((kb_name, entry.project), LineageGraph()).add(entry)

    def of(self, kb_name: str, project: str) -> LineageGraph:
        """The graph of one project of one KB (an empty one for a scope with no entries)."""
        return self.graphs.get((kb_name, project)) or LineageGraph()

    def names(self) -> set[str]:
        """Every relation name of every scope."""
        return {name for graph in self.graphs.values() for _, name in graph.objects}


class LineageIndex:
    """Reads and writes the entries of one namespace's KBs in the object store; ``documents``
    (the host's document repository) tells which documents completed."""

    def __init__(self, objects: Any, namespace: str, documents: Any = None) -> None:
        self._objects = objects
        self._namespace = namespace
        self._documents = documents
        self._cache: dict[str, Entry] = {}

    def key(self, kb_name: str, document_id: str) -> str:
        return object_key(self._namespace, kb_name, document_id, ENTRY_NAME)

    def write(self, kb_name: str, entry: Entry) -> None:
        body = {
            "document_id": entry.document_id,
            "filename": entry.filename,
            "project": entry.project,
            "kind": entry.kind,
            "objects": [o.to_dict() for o in entry.objects],
        }
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        key = self.key(kb_name, entry.document_id)
        self._objects.put(key, io.BytesIO(data), content_type="application/json")
        self._cache[key] = entry

    def graph(self, kb_names: Iterable[str]) -> ScopedLineage:
        """The lineage of these KBs' completed documents, one graph per (KB, project)."""
        lineage = ScopedLineage()
        for kb_name in dict.fromkeys(kb_names):
            for entry in self.entries(kb_name):
                lineage.add(kb_name, entry)
        return lineage

    @staticmethod
    def graph_of(entries: Iterable[Entry]) -> LineageGraph:
        graph = LineageGraph()
        for entry in entries:
            graph.add(entry)
        return graph

    def document_entry(self, kb_name: str, document_id: str) -> Entry | None:
        """One document's entry (None for a document that is not a lakehouse file)."""
        key = self.key(kb_name, document_id)
        return self._cache.get(key) or self._read(key)

    def entries(self, kb_name: str) -> list[Entry]:
        """The entries of the KB's completed documents."""
        prefix = validate_prefix(self._namespace, kb_name)
        keys = [k for k in self._objects.list(prefix) if k.endswith("/" + ENTRY_NAME)]
        completed = self._completed(kb_name) if keys else None
        found = []
        for key in keys:
            entry = self._cache.get(key) or self._read(key)
            if entry is not None and (completed is None or entry.document_id in completed):
                found.append(entry)
        return found

    def _completed(self, kb_name: str) -> set[str] | None:
        """The KB's completed documents (None without a document repository: all count).

        Read at every call, not cached: a KB rebuild sets completed documents pending again."""
        if self._documents is None:
            return None
        return set(self._documents.ids_in_kb(kb_name, status="completed"))

    def _read(self, key: str) -> Entry | None:
        try:
            raw = b"".join(self._objects.open(key))
        except NotFoundError:  # removed with its document since the listing
            return None
        entry = entry_from_json(json.loads(raw))
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = entry
        return entry


def _by_name(node: Node) -> tuple[str, str]:
    return node[1], node[0]


def entry_from_json(value: Mapping[str, Any]) -> Entry:
    return Entry(
        document_id=str(value["document_id"]),
        filename=str(value.get("filename", "")),
        project=str(value.get("project", "")),
        kind=str(value.get("kind", "")),
        objects=tuple(SemanticObject.from_dict(o) for o in value.get("objects", ())),
    )
